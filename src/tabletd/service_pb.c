/*
 * service_pb.c - protobuf-c for the service: messages unpacked with
 * allocations through util/alloc.h, and packed onto a struct buf.
 */
#include <errno.h>
#include <stdio.h>

#include "tabletd/service_int.h"
#include "util/alloc.h"
#include "util/coding.h"
#include "util/error.h"

/* An unpack's allocator, which remembers whether an allocation failed:
 * protobuf-c answers NULL both for that and for bytes that do not
 * unpack. */
struct pb_alloc {
	ProtobufCAllocator a;
	bool failed;
};

static void *
pb_alloc_malloc(void *data, size_t n)
{
	struct pb_alloc *pa = data;
	void *p = bt_malloc(n);

	if (p == NULL && pa != NULL)
		pa->failed = true;
	return p;
}

static void
pb_alloc_free(void *data, void *p)
{
	bt_free(p);
}

static ProtobufCAllocator pb_free_allocator = {
	.alloc = pb_alloc_malloc,
	.free = pb_alloc_free,
	.allocator_data = NULL,
};

int
service_pb_unpack(const ProtobufCMessageDescriptor *d, struct slice in,
    ProtobufCMessage **out)
{
	struct pb_alloc pa = {
		.a = { pb_alloc_malloc, pb_alloc_free, NULL },
		.failed = false,
	};
	ProtobufCMessage *m;

	pa.a.allocator_data = &pa;
	m = protobuf_c_message_unpack(d, &pa.a, in.n, in.n ? in.p : NULL);
	if (m == NULL) {
		if (pa.failed)
			return -ENOMEM;
		return bt_error_set(-EPROTO, "%s: request does not unpack "
		    "(%zu bytes)", d->name, in.n);
	}
	*out = m;
	return 0;
}

void
service_pb_free(ProtobufCMessage *m)
{
	if (m != NULL)
		protobuf_c_message_free_unpacked(m, &pb_free_allocator);
}

int
service_pb_pack(const ProtobufCMessage *m, struct buf *reply)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	int rc;

	if (n == 0)		/* an empty reply may have no storage yet */
		return 0;
	if ((rc = buf_reserve(reply, n)) < 0)
		return rc;
	reply->n += protobuf_c_message_pack(m, reply->p + reply->n);
	return 0;
}

int
service_pb_pack_field(uint32_t field, const ProtobufCMessage *m,
    struct buf *reply)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	uint8_t head[5 + 10], *e;
	int rc;

	e = encode_varint32(head,
	    field << 3 | PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED);
	e = encode_varint64(e, n);
	if ((rc = buf_reserve(reply, (size_t)(e - head) + n)) < 0)
		return rc;
	buf_append(reply, head, (size_t)(e - head));
	reply->n += protobuf_c_message_pack(m, reply->p + reply->n);
	return 0;
}
