// tests/acl/test_acl_context.cpp — the same program as test_acl_context.c, compiled as C++.
#include "test_acl_context.c"
