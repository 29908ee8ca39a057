"""The `pod-template-hash` a Deployment gives the ReplicaSet of each pod template: FNV-1a
(32 bits) of the template and the Deployment's collisionCount, written as its decimal
digits each mapped onto the consonants-and-digits alphabet Kubernetes uses for generated
names (so that no word is spelt). The real controller hashes Go's printed form of the
template; this one hashes its canonical JSON, so the values differ from a real cluster's
but behave the same: equal templates, equal hashes."""

import json

ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def fnv1a_32(data):
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def pod_template_hash(template, collision_count=0):
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count:
        data += str(collision_count).encode()
    return "".join(ALPHABET[ord(ch) % len(ALPHABET)] for ch in str(fnv1a_32(data)))
