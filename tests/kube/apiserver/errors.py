"""API errors as the Kubernetes API server reports them: `Status` objects.

Every failure a client can see is an `ApiError` carrying the HTTP code, the machine
reason (NotFound, AlreadyExists, Conflict, Invalid, ...) and details, so clients that
branch on `reason` (kubectl, client-go, the operator) behave as against a real server.
"""


class ApiError(Exception):
    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self):
        s = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            s["details"] = self.details
        return s


def success_status(details):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": details}


def _details(rt, name):
    d = {"name": name, "kind": rt.plural}
    if rt.group:
        d["group"] = rt.group
    return d


def not_found(rt, name):
    return ApiError(404, "NotFound", f'{rt.qualified_plural} "{name}" not found', _details(rt, name))


def already_exists(rt, name):
    return ApiError(409, "AlreadyExists", f'{rt.qualified_plural} "{name}" already exists',
                    _details(rt, name))


def conflict(rt, name, why="the object has been modified; please apply your changes to the "
                          "latest version and try again"):
    return ApiError(409, "Conflict",
                    f'Operation cannot be fulfilled on {rt.qualified_plural} "{name}": {why}',
                    _details(rt, name))


def bad_request(message):
    return ApiError(400, "BadRequest", message)


def forbidden(rt, name, why):
    return ApiError(403, "Forbidden", f'{rt.qualified_plural} "{name}" is forbidden: {why}',
                    _details(rt, name))


def method_not_allowed(message="the server does not allow this method on the requested resource"):
    return ApiError(405, "MethodNotAllowed", message)


def gone(message):
    return ApiError(410, "Expired", message)


class FieldError:
    """One entry of an Invalid (422) status, as field.Error renders it."""

    # field.ErrorType -> (cause reason, text that starts the message)
    KINDS = {
        "invalid": ("FieldValueInvalid", "Invalid value"),
        "required": ("FieldValueRequired", "Required value"),
        "unsupported": ("FieldValueNotSupported", "Unsupported value"),
        "forbidden": ("FieldValueForbidden", "Forbidden"),
        "duplicate": ("FieldValueDuplicate", "Duplicate value"),
        "toolong": ("FieldValueTooLong", "Too long"),
        "toomany": ("FieldValueTooMany", "Too many"),
        "typeinvalid": ("FieldValueTypeInvalid", "Invalid value"),
    }

    def __init__(self, kind, field, detail="", value=None, show_value=True):
        self.kind, self.field, self.detail, self.value = kind, field, detail, value
        self.show_value = show_value and kind in ("invalid", "unsupported", "duplicate",
                                                  "typeinvalid", "toomany")

    def message(self):
        _, text = self.KINDS[self.kind]
        s = f"{self.field}: {text}"
        if self.show_value:
            s += f": {render_value(self.value)}"
        if self.detail:
            s += f": {self.detail}"
        return s

    def cause(self):
        reason, text = self.KINDS[self.kind]
        msg = text
        if self.show_value:
            msg += f": {render_value(self.value)}"
        if self.detail:
            msg += f": {self.detail}"
        return {"reason": reason, "message": msg, "field": self.field}


def render_value(v):
    """Renders a rejected value the way field.Error does (Go %#v-like)."""
    if isinstance(v, str):
        import json
        return json.dumps(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, dict):
        return '"object"'
    if isinstance(v, list):
        return '"array"'
    return str(v)


def invalid(rt, name, field_errors):
    msgs = [e.message() for e in field_errors]
    joined = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    details = _details(rt, name)
    details["kind"] = rt.kind
    details["causes"] = [e.cause() for e in field_errors]
    return ApiError(422, "Invalid", f'{rt.kind}.{rt.group or ""}'.rstrip(".")
                    + f' "{name}" is invalid: {joined}', details)
