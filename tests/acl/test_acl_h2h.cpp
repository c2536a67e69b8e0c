// tests/acl/test_acl_h2h.cpp — the same program as test_acl_h2h.c, compiled as C++.
#include "test_acl_h2h.c"
