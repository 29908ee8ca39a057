"""Shared test fixture: one stand-in per test class, a fresh namespace per test."""

import itertools
import unittest

from harness import Standin
from fixtures import WIDGET_CRD, namespace

_ids = itertools.count(1)


class StandinTestCase(unittest.TestCase):
    tls = False
    install_widgets = True
    server_args = ()  # the class's own flags of the stand-in

    @classmethod
    def setUpClass(cls):
        cls.server = Standin(*cls.server_args, tls=cls.tls)
        cls.server.start()
        # class cleanups run even when the rest of setUpClass fails: no stray servers
        cls.addClassCleanup(cls._stop_server)
        cls.api = cls.server.client()
        if cls.install_widgets:
            r = cls.api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                             WIDGET_CRD)
            assert r.status == 201, r

    @classmethod
    def _stop_server(cls):
        cls.api.close()
        cls.server.stop()
        assert cls.server.returncode == 0, f"stand-in exited with {cls.server.returncode}"

    def setUp(self):
        self.ns = f"t{next(_ids)}-{self._testMethodName.replace('_', '-')[5:40].strip('-')}"
        r = self.api.post("/api/v1/namespaces", namespace(self.ns))
        self.assertEqual(r.status, 201, r)

    def tearDown(self):
        self.api.close_watches()

    # paths in the test's namespace
    def widgets(self, name=None):
        p = f"/apis/test.standin.dev/v1/namespaces/{self.ns}/widgets"
        return p if name is None else f"{p}/{name}"

    def core(self, plural, name=None):
        p = f"/api/v1/namespaces/{self.ns}/{plural}"
        return p if name is None else f"{p}/{name}"

    def created(self, path, body):
        r = self.api.post(path, body)
        self.assertEqual(r.status, 201, r)
        return r.json

    def assertStatus(self, r, code, reason=None):
        self.assertEqual(r.status, code, r)
        self.assertEqual(r.json.get("kind"), "Status", r)
        self.assertEqual(r.json.get("code"), code, r)
        if reason:
            self.assertEqual(r.json.get("reason"), reason, r)
