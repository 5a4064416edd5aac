"""Writes plain_p2.pickle and plain_p4.pickle, the unpickler's small known inputs (every plain
type, a memoized value used twice, a list appended in batches)."""
import pickle

v = {"a": [1, -2, 300, 70000, -(2**40), 2**62, 1.5, None, True, False, "é🚀"], "t": (1, 2),
     "t3": (1, 2, 3), "big": list(range(2500)), "e": {}, "nested": [[[]]]}
s = {"x": "shared"}
v["m1"] = s
v["m2"] = s
for proto in (2, 4):
    with open(f"plain_p{proto}.pickle", "wb") as f:
        f.write(pickle.dumps(v, protocol=proto))
