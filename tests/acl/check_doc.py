#!/usr/bin/python3
"""tests/acl/check_doc.py — docs/acl.md lists the calls the library does not
offer; this checks that list against the build's generated unsupported.c
(the calls that answer ACL_ERROR_API_NOT_SUPPORT), both ways, so that the
documentation says exactly what a program will meet.

usage: check_doc.py DOCS_ACL_MD UNSUPPORTED_C
"""
import re
import sys

doc, gen = open(sys.argv[1]).read(), open(sys.argv[2]).read()
section = doc.split("## Calls rdev does not offer", 1)
if len(section) != 2:
    sys.exit("docs/acl.md has no section '## Calls rdev does not offer'")
body = section[1].split("\n## ", 1)[0]
listed = set(re.findall(r"`(acl\w+)`", body))
generated = set(re.findall(r'acl_unsupported\("(acl\w+)"\)', gen))
missing, extra = sorted(generated - listed), sorted(listed - generated)
if missing:
    print("not listed in docs/acl.md but not offered:", ", ".join(missing))
if extra:
    print("listed in docs/acl.md but offered:", ", ".join(extra))
print(f"{len(generated)} calls not offered, {len(listed)} listed")
sys.exit(1 if missing or extra else 0)
