// tests/acl/test_acl_errors.cpp — the same program as test_acl_errors.c, compiled as C++.
#include "test_acl_errors.c"
