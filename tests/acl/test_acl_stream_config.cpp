// tests/acl/test_acl_stream_config.cpp — the same program as test_acl_stream_config.c, compiled as C++.
#include "test_acl_stream_config.c"
