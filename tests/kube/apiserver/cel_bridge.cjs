// CEL bridge for the Kubernetes API stand-in.
//
// The stand-in is Python; CEL has no Python implementation on these machines, so the
// CRD's x-kubernetes-validations rules are evaluated here with @bufbuild/cel (a
// conformance-tested CEL for ECMAScript). One process serves the whole server.
//
// Protocol: one JSON request per line on stdin, one JSON reply per line on stdout,
// replies in request order.
//   {"op":"compile","id":K,"rule":R,"messageExpression":M,"schema":S}
//       -> {"ok":true,"usesOldSelf":B} | {"ok":false,"error":E}
//   {"op":"eval","id":K,"self":V,"oldSelf":V?}
//       -> {"ok":true,"valid":B,"message":M?} | {"ok":false,"error":E}
//   {"op":"evalAll","evals":[{"id":K,"self":V,"oldSelf":V?}, ...]}
//       -> {"ok":true,"results":[<an eval's reply>, ...]}
//       every rule an object's write runs, in one round trip (a TrainingJob's
//       are about twenty; one line each cost the stand-in a third of a create)
// S is the OpenAPI schema of the node the rule sits on. JSON cannot tell 5 from 5.0,
// but CEL can (int vs double), so values are typed here from the schema exactly as
// the real API server types them: `integer` -> int, `number` -> double.
"use strict";

const readline = require("node:readline");
const { parse, plan, celEnv, celMethod, celList, CelScalar, listType, isCelError, isCelList } =
  require("@bufbuild/cel");
const { strings } = require("@bufbuild/cel/ext");
const { RE2JS } = require("@bufbuild/re2");

const { DYN, INT, STRING } = CelScalar;
const LIST = listType(DYN);

function compareCel(a, b) {
  if (typeof a === "bigint" && typeof b === "bigint") return a < b ? -1 : a > b ? 1 : 0;
  const x = typeof a === "bigint" ? Number(a) : a;
  const y = typeof b === "bigint" ? Number(b) : b;
  return x < y ? -1 : x > y ? 1 : 0;
}

function listValues(l) {
  return Array.from(isCelList(l) ? l.values() : l);
}

// This RE2 build only answers "does it match", so find/findAll check the pattern is
// valid RE2 (as Kubernetes requires) and then search with the JavaScript engine, whose
// leftmost-first semantics agree with RE2 for the patterns RE2 accepts.
function findAll(text, re, limit) {
  RE2JS.compile(re);
  const out = [];
  const g = new RegExp(re, "gu");
  let m;
  while ((limit < 0n || BigInt(out.length) < limit) && (m = g.exec(text)) !== null) {
    out.push(m[0]);
    if (m[0] === "") g.lastIndex++;
  }
  return out;
}

// The Kubernetes CEL libraries that CRD authors use beyond the CEL standard and the
// strings extension (k8s.io/apiserver/pkg/cel/library: lists, regex).
const kubernetesLibrary = [
  celMethod("isSorted", LIST, [], CelScalar.BOOL, function () {
    const v = listValues(this);
    for (let i = 1; i < v.length; i++) if (compareCel(v[i - 1], v[i]) > 0) return false;
    return true;
  }),
  celMethod("sum", LIST, [], DYN, function () {
    const v = listValues(this);
    if (v.length === 0) return 0n;
    return v.reduce((acc, x) => acc + x);
  }),
  celMethod("min", LIST, [], DYN, function () {
    const v = listValues(this);
    if (v.length === 0) throw new Error("min called on empty list");
    return v.reduce((m, x) => (compareCel(x, m) < 0 ? x : m));
  }),
  celMethod("max", LIST, [], DYN, function () {
    const v = listValues(this);
    if (v.length === 0) throw new Error("max called on empty list");
    return v.reduce((m, x) => (compareCel(x, m) > 0 ? x : m));
  }),
  celMethod("find", STRING, [STRING], STRING, function (re) {
    const m = findAll(this, re, 1n);
    return m.length ? m[0] : "";
  }),
  celMethod("findAll", STRING, [STRING], listType(STRING), function (re) {
    return celList(findAll(this, re, -1n));
  }),
  celMethod("findAll", STRING, [STRING, INT], listType(STRING), function (re, n) {
    return celList(findAll(this, re, n));
  }),
];

const env = celEnv({ funcs: [...strings, ...kubernetesLibrary] });

// Types a decoded JSON value by its structural schema.
function typed(value, schema) {
  if (value === null || value === undefined) return null;
  schema = schema || {};
  if (Array.isArray(value)) return value.map((x) => typed(x, schema.items));
  if (typeof value === "object") {
    const out = {};
    const props = schema.properties || {};
    for (const [k, v] of Object.entries(value)) {
      const sub = props[k] || (typeof schema.additionalProperties === "object" ? schema.additionalProperties : {});
      out[k] = typed(v, sub);
    }
    return out;
  }
  if (typeof value === "number") {
    if (schema.type === "number") return value;
    // integer, int-or-string, or untyped (preserve-unknown-fields): JSON integers are int64.
    return Number.isInteger(value) ? BigInt(value) : value;
  }
  return value;
}

function referencesOldSelf(expr) {
  // Walks the parsed AST looking for the identifier oldSelf: a transition rule.
  let found = false;
  (function walk(node) {
    if (found || node === null || typeof node !== "object") return;
    if (node.$typeName === "cel.expr.Expr.Ident" && node.name === "oldSelf") found = true;
    for (const v of Object.values(node)) {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === "object" && typeof v !== "bigint") walk(v);
    }
  })(expr);
  return found;
}

const programs = new Map(); // id -> {rule, message, schema}

function compile(req) {
  let parsed;
  let message = null;
  try {
    parsed = parse(req.rule);
    if (req.messageExpression) message = plan(env, parse(req.messageExpression));
  } catch (e) {
    return { ok: false, error: String(e.message || e) };
  }
  programs.set(req.id, { rule: plan(env, parsed), message, schema: req.schema || {} });
  return { ok: true, usesOldSelf: referencesOldSelf(parsed) };
}

function evaluate(req) {
  const p = programs.get(req.id);
  if (!p) return { ok: false, error: `rule ${req.id} was never compiled` };
  const bindings = { self: typed(req.self, p.schema) };
  if ("oldSelf" in req) bindings.oldSelf = typed(req.oldSelf, p.schema);
  const result = p.rule(bindings);
  if (isCelError(result)) return { ok: false, error: result.message };
  if (typeof result !== "boolean") return { ok: false, error: `rule did not evaluate to a bool: ${String(result)}` };
  const reply = { ok: true, valid: result };
  if (!result && p.message) {
    const m = p.message(bindings);
    if (typeof m === "string") reply.message = m;
  }
  return reply;
}

function evaluateAll(req) {
  if (!Array.isArray(req.evals)) return { ok: false, error: "evalAll without evals" };
  return {
    ok: true,
    results: req.evals.map((e) => {
      try {
        return evaluate(e);
      } catch (err) {
        return { ok: false, error: String(err && err.message ? err.message : err) };
      }
    }),
  };
}

const OPS = { compile, eval: evaluate, evalAll: evaluateAll };

const rl = readline.createInterface({ input: process.stdin, terminal: false });
rl.on("line", (line) => {
  let reply;
  try {
    const req = JSON.parse(line);
    reply = OPS[req.op] ? OPS[req.op](req) : { ok: false, error: "unknown op" };
  } catch (e) {
    reply = { ok: false, error: String(e && e.message ? e.message : e) };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
});
rl.on("close", () => process.exit(0));
