/*
 * rpc_pb.h - what the cell's clients share for protobuf-c's messages
 * (rpc/tabletfs.proto): an allocator going through util/alloc.h, so
 * that a test can fail the Nth allocation of an unpack too.
 */
#ifndef TABLETFS_RPC_RPC_PB_H
#define TABLETFS_RPC_RPC_PB_H

#include <protobuf-c/protobuf-c.h>

/* bt_malloc and bt_free for protobuf_c_message_unpack() and
 * protobuf_c_message_free_unpacked(); never changed. */
extern ProtobufCAllocator rpc_pb_allocator;

#endif
