// tests/acl/test_acl_p2p.cpp — the same program as test_acl_p2p.c, compiled as C++.
#include "test_acl_p2p.c"
