"""Behaviour 11 and the CRD schema as a real server enforces it on custom resources:
types, enums, ranges, required fields, defaults, pruning (or 400 under
fieldValidation=Strict), list types, ratcheting, and the CEL rules (evaluated by a real
CEL implementation; this suite fails, never skips, if the stand-in cannot run CEL)."""

import unittest

from base import StandinTestCase
from fixtures import GROUP, WIDGET_CRD, widget

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


class Schema(StandinTestCase):
    def invalid(self, body, *fragments):
        r = self.api.post(self.widgets(), body)
        self.assertStatus(r, 422, "Invalid")
        for f in fragments:
            self.assertIn(f, r.json["message"])
        return r.json

    def test_11_strict_field_validation_rejects_unknown_fields(self):
        body = widget("a", bogus=1)
        body["metadata"]["nonsense"] = True
        r = self.api.post(self.widgets(), body, fieldValidation="Strict")
        self.assertStatus(r, 400, "BadRequest")
        self.assertEqual(r.json["message"],
                         'Widget in version "v1" cannot be handled as a Widget: strict decoding '
                         'error: unknown field "metadata.nonsense", unknown field "spec.bogus"')

    def test_unknown_fields_are_pruned_with_a_warning_by_default(self):
        body = widget("a", bogus=1, extra={"anything": {"goes": [1, 2]}})
        body["spec"]["ports"] = [{"name": "http", "junk": True}]
        r = self.api.post(self.widgets(), body)
        self.assertEqual(r.status, 201, r)
        self.assertNotIn("bogus", r.json["spec"])
        self.assertEqual(r.json["spec"]["extra"], {"anything": {"goes": [1, 2]}},
                         "x-kubernetes-preserve-unknown-fields keeps everything")
        self.assertEqual(r.json["spec"]["ports"], [{"name": "http", "port": 80}])
        self.assertIn('unknown field \\"spec.bogus\\"', " ".join(r.warnings()))
        r = self.api.post(self.widgets(), widget("b", bogus=1), fieldValidation="Ignore")
        self.assertEqual(r.warnings(), [])

    def test_defaults_apply_top_down_and_on_update(self):
        r = self.created(self.widgets(), widget("a"))
        self.assertEqual(r["spec"]["color"], "red")
        self.assertEqual(r["spec"]["budget"], {"minutes": 10})
        r = self.api.patch(self.widgets("a"), {"spec": {"color": None, "budget": {"minutes": 3}}})
        self.assertEqual(r.json["spec"]["color"], "red")
        self.assertEqual(r.json["spec"]["budget"], {"minutes": 3})

    def test_types_enums_ranges_lengths_patterns(self):
        cases = [
            (widget("a", size="big"), 'spec.size: Invalid value: "string": spec.size in body '
                                      'must be of type integer: "string"'),
            # Past int64 the API server decodes a float, which an integer field refuses.
            (widget("a", size=2**63), 'spec.size: Invalid value: "number": spec.size in body '
                                      'must be of type integer: "number"'),
            (widget("a", size=0), "spec.size: Invalid value: 0: spec.size in body should be "
                                  "greater than or equal to 1"),
            (widget("a", size=11), "spec.size in body should be less than or equal to 10"),
            (widget("a", color="pink"), 'spec.color: Unsupported value: "pink": supported '
                                        'values: "red", "green", "blue"'),
            (widget("a", ratio=0), "spec.ratio in body should be greater than 0"),
            (widget("a", title="abcdefghijkl"), "spec.title: Too long: may not be more than 10"),
            (widget("a", title="ABC"), "spec.title in body should match '^[a-z]+$'"),
            # Go's $ is the end of the text; Python's also matches before a last newline.
            (widget("a", title="abc\n"), "spec.title in body should match '^[a-z]+$'"),
            (widget("a", tags=["a", "b", "c", "d"]), "spec.tags: Too many: 4: must have at most "
                                                     "3 items"),
            (widget("a", tags=["a", "a"]), 'spec.tags[1]: Duplicate value: "a"'),
            (widget("a", ports=[{"name": "x"}, {"name": "x"}]), "spec.ports[1]: Duplicate value"),
            (widget("a", limits={"cpu": "lots"}), "spec.limits.cpu in body must be of type "
                                                  "integer"),
        ]
        for body, fragment in cases:
            with self.subTest(fragment=fragment):
                self.invalid(body, fragment)
        body = widget("a")
        del body["spec"]["size"]
        err = self.invalid(body, "spec.size: Required value")
        self.assertEqual(err["details"]["causes"][0],
                         {"reason": "FieldValueRequired", "message": "Required value",
                          "field": "spec.size"})
        # several errors are reported together
        self.invalid(widget("a", size=0, color="pink"), "[spec.size", ", spec.color")

    def test_cel_rules_run_on_create_and_update(self):
        info = self.api.hook("info", method="GET").json
        self.assertTrue(info["cel"], f"CEL is not available: {info['celUnavailableReason']}")
        err = self.invalid(widget("a", size=2, replicas=3),
                           'spec.replicas: Invalid value: "object": replicas must not exceed '
                           'size')
        self.assertEqual(err["details"]["causes"][0]["field"], "spec.replicas")
        self.invalid(widget("a", mode="pipeline"), "mode pipeline is not supported yet")
        self.invalid(widget("a", tags=["Up"]), "tags must be lower case")
        self.created(self.widgets(), widget("a", size=4, replicas=4, mode="rows", tags=["x"]))
        r = self.api.patch(self.widgets("a"), {"spec": {"replicas": 5}})
        self.assertStatus(r, 422, "Invalid")
        self.assertIn("replicas must not exceed size", r.json["message"])

    def test_cel_transition_rule_makes_a_field_immutable(self):
        self.created(self.widgets(), widget("a", serial="s-1"))
        r = self.api.patch(self.widgets("a"), {"spec": {"serial": "s-2"}})
        self.assertStatus(r, 422, "Invalid")
        self.assertIn("spec.serial: Invalid value: \"string\": serial is immutable",
                      r.json["message"])
        self.assertEqual(self.api.patch(self.widgets("a"), {"spec": {"size": 5}}).status, 200)

    def test_validation_ratchets_unchanged_invalid_values(self):
        # Tighten the schema after an object exists: the old value stays accepted on
        # updates that do not touch it, as Kubernetes 1.32 ratchets validation.
        self.created(self.widgets(), widget("a", size=9))
        crd = self.api.get(f"{CRDS}/widgets.{GROUP}").json
        try:
            crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
                "properties"]["size"]["maximum"] = 5
            self.assertEqual(self.api.put(f"{CRDS}/widgets.{GROUP}", crd).status, 200)
            self.assertEqual(self.api.patch(self.widgets("a"), {"spec": {"color": "blue"}})
                             .status, 200)
            r = self.api.patch(self.widgets("a"), {"spec": {"size": 8}})
            self.assertStatus(r, 422, "Invalid")
        finally:
            cur = self.api.get(f"{CRDS}/widgets.{GROUP}").json
            cur["spec"] = WIDGET_CRD["spec"]
            self.assertEqual(self.api.put(f"{CRDS}/widgets.{GROUP}", cur).status, 200)

    def test_status_is_validated_too(self):
        self.created(self.widgets(), widget("a"))
        r = self.api.patch(self.widgets("a") + "/status",
                           {"status": {"conditions": [{"type": "Ready", "status": "Maybe"}]}})
        self.assertStatus(r, 422, "Invalid")
        self.assertIn('status.conditions[0].status: Unsupported value: "Maybe"',
                      r.json["message"])


class CustomResourceDefinitions(StandinTestCase):
    install_widgets = False

    def crd(self, name="gadgets", rules=None, versions=None):
        spec_schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
        if rules:
            spec_schema["x-kubernetes-validations"] = rules
        return {
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{name}.{GROUP}"},
            "spec": {"group": GROUP, "scope": "Namespaced",
                     "names": {"plural": name, "kind": name.capitalize()[:-1]},
                     "versions": versions or [{"name": "v1", "served": True, "storage": True,
                                               "schema": {"openAPIV3Schema": {
                                                   "type": "object",
                                                   "properties": {"spec": spec_schema}}}}]}}

    def test_crd_is_established_and_its_kind_served(self):
        r = self.created(CRDS, self.crd())
        conds = {c["type"]: c["status"] for c in r["status"]["conditions"]}
        self.assertEqual(conds, {"NamesAccepted": "True", "Established": "True"})
        self.assertEqual(r["status"]["acceptedNames"]["kind"], "Gadget")
        self.assertEqual(r["spec"]["names"]["listKind"], "GadgetList")
        self.assertIn("customresourcecleanup.apiextensions.k8s.io", r["metadata"]["finalizers"])
        path = f"/apis/{GROUP}/v1/namespaces/{self.ns}/gadgets"
        self.created(path, {"apiVersion": f"{GROUP}/v1", "kind": "Gadget",
                            "metadata": {"name": "g"}, "spec": {"n": 1}})
        # deleting the CRD deletes its instances, then stops serving the kind
        self.api.delete(f"{CRDS}/gadgets.{GROUP}")
        from harness import wait_until
        self.assertTrue(wait_until(lambda: self.api.get(f"{CRDS}/gadgets.{GROUP}").status == 404))
        self.assertEqual(self.api.get(path).status, 404)

    def test_crd_with_uncompilable_cel_rule_is_rejected(self):
        r = self.api.post(CRDS, self.crd("broken", rules=[{"rule": "self.n >"}]))
        self.assertStatus(r, 422, "Invalid")
        self.assertIn("x-kubernetes-validations[0].rule", r.json["message"])
        self.assertIn("compilation failed", r.json["message"])

    def test_crd_name_must_match_plural_and_group(self):
        body = self.crd()
        body["metadata"]["name"] = "wrong.example.com"
        r = self.api.post(CRDS, body)
        self.assertStatus(r, 422, "Invalid")
        self.assertIn('must be spec.names.plural+"."+spec.group', r.json["message"])

    def test_multiple_served_versions_share_storage(self):
        schema = {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"n": {"type": "integer"}}}}}}
        body = self.crd("doodads", versions=[
            {"name": "v1", "served": True, "storage": True, "schema": schema},
            {"name": "v1beta1", "served": True, "storage": False, "schema": schema}])
        self.created(CRDS, body)
        self.created(f"/apis/{GROUP}/v1beta1/namespaces/{self.ns}/doodads",
                     {"apiVersion": f"{GROUP}/v1beta1", "kind": "Doodad",
                      "metadata": {"name": "d"}, "spec": {"n": 2}})
        r = self.api.get(f"/apis/{GROUP}/v1/namespaces/{self.ns}/doodads/d")
        self.assertEqual(r.json["apiVersion"], f"{GROUP}/v1")
        r = self.api.get(f"/apis/{GROUP}/v1beta1/namespaces/{self.ns}/doodads")
        self.assertEqual(r.json["items"][0]["apiVersion"], f"{GROUP}/v1beta1")


if __name__ == "__main__":
    unittest.main()
