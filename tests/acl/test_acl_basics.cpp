// tests/acl/test_acl_basics.cpp — the same program as test_acl_basics.c, compiled as C++.
#include "test_acl_basics.c"
