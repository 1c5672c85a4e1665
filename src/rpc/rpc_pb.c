/*
 * rpc_pb.c - the protobuf-c allocator of rpc_pb.h.
 */
#include "rpc/rpc_pb.h"
#include "util/alloc.h"

static void *
pb_alloc(void *arg, size_t size)
{
	(void)arg;
	return bt_malloc(size);
}

static void
pb_free(void *arg, void *p)
{
	(void)arg;
	bt_free(p);
}

ProtobufCAllocator rpc_pb_allocator = {
	.alloc = pb_alloc,
	.free = pb_free,
};
