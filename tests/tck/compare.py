"""Compares two JUnit reports of the A2A TCK: the yardstick's (the a2a-sdk 1.3 peer) and serve's.

Prints each side's pass / fail / skip counts, every test serve passes and the yardstick does not,
and every test the yardstick passes and serve does not; exits 1 when there is one of the latter.

Usage: compare.py LABEL YARDSTICK.xml SERVE.xml [SERVE_LIVE.xml]
         (a test serve passes in its live run counts as passed)
       compare.py --live SERVE.xml [EXCUSED_TEST_NAME...]
         (the live-task run: its counts, and exit 1 when a test fails that is not excused)
"""

import sys
import xml.etree.ElementTree as ET


def outcomes(path):
    out = {}
    for tc in ET.parse(path).getroot().iter("testcase"):
        name = tc.attrib["classname"] + "::" + tc.attrib["name"]
        state = "pass"
        for child in tc:
            if child.tag in ("failure", "error"):
                state = "fail"
            elif child.tag == "skipped":
                state = "skip"
        out[name] = state
    return out


def counts(o):
    return " ".join(f"{s} {sum(1 for v in o.values() if v == s)}" for s in ("pass", "fail", "skip"))


def bare(name):
    """A test's name without its class or its parameters (`[jsonrpc]`)."""
    return name.split("::")[-1].split("[")[0]


def live(path, excused):
    serve = outcomes(path)
    print(f"live (a task waiting on a permission question): serve: {counts(serve)}")
    failing = sorted(k for k, v in serve.items() if v == "fail")
    for k in failing:
        print(f"  {'excused' if bare(k) in excused else 'FAILS'}: {k}")
    sys.exit(1 if any(bare(k) not in excused for k in failing) else 0)


def main():
    if sys.argv[1] == "--live":
        return live(sys.argv[2], set(sys.argv[3:]))
    label, yard_path, serve_path = sys.argv[1:4]
    yard, serve = outcomes(yard_path), outcomes(serve_path)
    for extra in sys.argv[4:]:
        for k, v in outcomes(extra).items():
            if v == "pass":
                serve[k] = "pass"
    print(f"{label}: a2a-sdk 1.3: {counts(yard)}; serve: {counts(serve)}")
    short = sorted(k for k, v in yard.items() if v == "pass" and serve.get(k) != "pass")
    more = sorted(k for k, v in serve.items() if v == "pass" and yard.get(k) != "pass")
    for k in more:
        print(f"  serve passes, a2a-sdk {yard.get(k, 'absent')}: {k}")
    for k in short:
        print(f"  SHORT: a2a-sdk passes, serve {serve.get(k, 'absent')}: {k}")
    for k in sorted(k for k, v in serve.items() if v == "fail"):
        print(f"  serve fails: {k}")
    sys.exit(1 if short else 0)


if __name__ == "__main__":
    main()
