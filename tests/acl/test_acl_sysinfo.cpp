// tests/acl/test_acl_sysinfo.cpp — the same program as test_acl_sysinfo.c, compiled as C++.
#include "test_acl_sysinfo.c"
