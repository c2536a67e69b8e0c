// tests/acl/test_acl_callbacks.cpp — the same program as test_acl_callbacks.c, compiled as C++.
#include "test_acl_callbacks.c"
