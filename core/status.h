#pragma once
// Expected failures are values, not exceptions (Abseil's model): every fallible
// call returns Status or StatusOr<T>, and nothing throws across module boundaries.

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace edgetrain {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // the caller's input is wrong; retrying will not help
  kNotFound,           // a file, data set or object does not exist
  kAlreadyExists,
  kFailedPrecondition, // the system is not in a state to do this (e.g. missing package)
  kOutOfRange,
  kUnimplemented,      // a valid request for a capability that has not landed
  kUnavailable,        // transient: a peer or link is down; retrying may help
  kDeadlineExceeded,
  kAborted,            // a conflict (e.g. a plan generation mismatch)
  kCancelled,
  kDataLoss,           // stored data is corrupt or truncated
  kInternal,
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: spec.model.name: ..." (or "OK").
  std::string ToString() const;

  // Prefixes the message with where it happened: "reading plan.json: <message>".
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgumentError(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFoundError(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status FailedPreconditionError(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status UnimplementedError(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status UnavailableError(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status AbortedError(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
inline Status DataLossError(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status InternalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status CancelledError(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
inline Status DeadlineExceededError(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : state_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : state_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(state_).ok() && "StatusOr needs a value or an error");
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(state_); }

  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<Status, T> state_;
};

}  // namespace edgetrain

// Returns early from the enclosing function when `expr` yields a non-OK Status.
#define EDGETRAIN_RETURN_IF_ERROR(expr)                  \
  do {                                                   \
    ::edgetrain::Status edgetrain_status_ = (expr);      \
    if (!edgetrain_status_.ok()) return edgetrain_status_; \
  } while (false)

#define EDGETRAIN_CONCAT_INNER_(a, b) a##b
#define EDGETRAIN_CONCAT_(a, b) EDGETRAIN_CONCAT_INNER_(a, b)
// EDGETRAIN_ASSIGN_OR_RETURN(auto x, MakeX()); returns the error if MakeX() fails.
#define EDGETRAIN_ASSIGN_OR_RETURN(lhs, expr) \
  EDGETRAIN_ASSIGN_OR_RETURN_IMPL_(EDGETRAIN_CONCAT_(edgetrain_or_, __LINE__), lhs, expr)
#define EDGETRAIN_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                     \
  if (!tmp.ok()) return tmp.status();                    \
  lhs = std::move(tmp).value()
