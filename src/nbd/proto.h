/* proto.h — the NBD wire protocol as uraid's server speaks it: the
 * fixed-newstyle handshake, simple and structured replies.  Everything on
 * the wire is big-endian; the structs below are the exact wire layouts
 * (packed, checked with _Static_assert) and are converted with the
 * be*toh()/htobe*() helpers of <endian.h> at the edge.
 *
 * Source: the NBD protocol document (doc/proto.md in the nbd project). */
#ifndef URAID_NBD_PROTO_H
#define URAID_NBD_PROTO_H

#include <stdint.h>

/* Handshake magics. */
#define NBD_MAGIC 0x4e42444d41474943ull     /* "NBDMAGIC" */
#define NBD_IHAVEOPT 0x49484156454f5054ull  /* "IHAVEOPT" */
#define NBD_REP_MAGIC 0x0003e889045565a9ull /* option replies */

/* Handshake flags (server) and client flags. */
#define NBD_FLAG_FIXED_NEWSTYLE 0x1u
#define NBD_FLAG_NO_ZEROES 0x2u
#define NBD_FLAG_C_FIXED_NEWSTYLE 0x1u
#define NBD_FLAG_C_NO_ZEROES 0x2u

/* Options. */
#define NBD_OPT_EXPORT_NAME 1u
#define NBD_OPT_ABORT 2u
#define NBD_OPT_LIST 3u
#define NBD_OPT_STARTTLS 5u
#define NBD_OPT_INFO 6u
#define NBD_OPT_GO 7u
#define NBD_OPT_STRUCTURED_REPLY 8u
#define NBD_OPT_LIST_META_CONTEXT 9u
#define NBD_OPT_SET_META_CONTEXT 10u

/* Option reply types. */
#define NBD_REP_ACK 1u
#define NBD_REP_SERVER 2u
#define NBD_REP_INFO 3u
#define NBD_REP_META_CONTEXT 4u
#define NBD_REP_FLAG_ERROR 0x80000000u
#define NBD_REP_ERR_UNSUP (NBD_REP_FLAG_ERROR | 1u)
#define NBD_REP_ERR_POLICY (NBD_REP_FLAG_ERROR | 2u)
#define NBD_REP_ERR_INVALID (NBD_REP_FLAG_ERROR | 3u)
#define NBD_REP_ERR_PLATFORM (NBD_REP_FLAG_ERROR | 4u)
#define NBD_REP_ERR_TLS_REQD (NBD_REP_FLAG_ERROR | 5u)
#define NBD_REP_ERR_UNKNOWN (NBD_REP_FLAG_ERROR | 6u)
#define NBD_REP_ERR_SHUTDOWN (NBD_REP_FLAG_ERROR | 7u)
#define NBD_REP_ERR_TOO_BIG (NBD_REP_FLAG_ERROR | 9u)

/* NBD_REP_INFO payload types. */
#define NBD_INFO_EXPORT 0u
#define NBD_INFO_NAME 1u
#define NBD_INFO_DESCRIPTION 2u
#define NBD_INFO_BLOCK_SIZE 3u

/* Transmission flags. */
#define NBD_FLAG_HAS_FLAGS (1u << 0)
#define NBD_FLAG_READ_ONLY (1u << 1)
#define NBD_FLAG_SEND_FLUSH (1u << 2)
#define NBD_FLAG_SEND_FUA (1u << 3)
#define NBD_FLAG_ROTATIONAL (1u << 4)
#define NBD_FLAG_SEND_TRIM (1u << 5)
#define NBD_FLAG_SEND_WRITE_ZEROES (1u << 6)
#define NBD_FLAG_SEND_DF (1u << 7)
#define NBD_FLAG_CAN_MULTI_CONN (1u << 8)
#define NBD_FLAG_SEND_RESIZE (1u << 9)
#define NBD_FLAG_SEND_CACHE (1u << 10)
#define NBD_FLAG_SEND_FAST_ZERO (1u << 11)

/* Transmission magics. */
#define NBD_REQUEST_MAGIC 0x25609513u
#define NBD_SIMPLE_REPLY_MAGIC 0x67446698u
#define NBD_STRUCTURED_REPLY_MAGIC 0x668e33efu

/* Commands. */
#define NBD_CMD_READ 0u
#define NBD_CMD_WRITE 1u
#define NBD_CMD_DISC 2u
#define NBD_CMD_FLUSH 3u
#define NBD_CMD_TRIM 4u
#define NBD_CMD_CACHE 5u
#define NBD_CMD_WRITE_ZEROES 6u
#define NBD_CMD_BLOCK_STATUS 7u

/* Command flags. */
#define NBD_CMD_FLAG_FUA (1u << 0)
#define NBD_CMD_FLAG_NO_HOLE (1u << 1)
#define NBD_CMD_FLAG_DF (1u << 2)
#define NBD_CMD_FLAG_REQ_ONE (1u << 3)
#define NBD_CMD_FLAG_FAST_ZERO (1u << 4)

/* Structured reply chunk flags and types. */
#define NBD_REPLY_FLAG_DONE (1u << 0)
#define NBD_REPLY_TYPE_NONE 0u
#define NBD_REPLY_TYPE_OFFSET_DATA 1u
#define NBD_REPLY_TYPE_BLOCK_STATUS 5u
#define NBD_REPLY_TYPE_ERROR ((1u << 15) | 1u)

/* Error values on the wire (Linux numbering, fixed by the protocol). */
#define NBD_EPERM 1u
#define NBD_EIO 5u
#define NBD_ENOMEM 12u
#define NBD_EINVAL 22u
#define NBD_ENOSPC 28u
#define NBD_EOVERFLOW 75u
#define NBD_ENOTSUP 95u
#define NBD_ESHUTDOWN 108u

/* Limits the server enforces during the handshake. */
#define NBD_MAX_NAME 4096u     /* export names and descriptions */
#define NBD_MAX_OPTION 16384u  /* option payload we read into memory */

/* Server greeting: magic, IHAVEOPT, handshake flags. */
struct nbd_greeting {
	uint64_t magic;
	uint64_t ihaveopt;
	uint16_t flags;
} __attribute__((packed));
_Static_assert(sizeof(struct nbd_greeting) == 18, "nbd_greeting");

/* Client option header; `len` bytes of data follow. */
struct nbd_option {
	uint64_t magic;
	uint32_t option;
	uint32_t len;
} __attribute__((packed));
_Static_assert(sizeof(struct nbd_option) == 16, "nbd_option");

/* Server option reply header; `len` bytes of data follow. */
struct nbd_option_reply {
	uint64_t magic;
	uint32_t option;
	uint32_t type;
	uint32_t len;
} __attribute__((packed));
_Static_assert(sizeof(struct nbd_option_reply) == 20, "nbd_option_reply");

/* Reply to NBD_OPT_EXPORT_NAME (followed by 124 zero bytes unless the
 * client set NBD_FLAG_C_NO_ZEROES). */
struct nbd_export_name_reply {
	uint64_t size;
	uint16_t tflags;
} __attribute__((packed));
_Static_assert(sizeof(struct nbd_export_name_reply) == 10, "export_name_reply");

/* NBD_REP_INFO payloads. */
struct nbd_info_export {
	uint16_t type; /* NBD_INFO_EXPORT */
	uint64_t size;
	uint16_t tflags;
} __attribute__((packed));
_Static_assert(sizeof(struct nbd_info_export) == 12, "nbd_info_export");

struct nbd_info_block_size {
	uint16_t type; /* NBD_INFO_BLOCK_SIZE */
	uint32_t min, pref, max;
} __attribute__((packed));
_Static_assert(sizeof(struct nbd_info_block_size) == 14, "nbd_info_block_size");

/* Transmission request; a WRITE's `len` bytes of payload follow. */
struct nbd_request {
	uint32_t magic;
	uint16_t flags;
	uint16_t type;
	uint64_t cookie;
	uint64_t offset;
	uint32_t len;
} __attribute__((packed));
_Static_assert(sizeof(struct nbd_request) == 28, "nbd_request");

struct nbd_simple_reply {
	uint32_t magic;
	uint32_t error;
	uint64_t cookie;
} __attribute__((packed));
_Static_assert(sizeof(struct nbd_simple_reply) == 16, "nbd_simple_reply");

/* Structured reply chunk header; `len` bytes of payload follow. */
struct nbd_structured_reply {
	uint32_t magic;
	uint16_t flags;
	uint16_t type;
	uint64_t cookie;
	uint32_t len;
} __attribute__((packed));
_Static_assert(sizeof(struct nbd_structured_reply) == 20, "nbd_structured_reply");

/* NBD_REPLY_TYPE_OFFSET_DATA: header, then the offset, then the data. */
struct nbd_chunk_offset_data {
	struct nbd_structured_reply hdr;
	uint64_t offset;
} __attribute__((packed));
_Static_assert(sizeof(struct nbd_chunk_offset_data) == 28, "chunk_offset_data");

/* The one metadata context (NBD_CMD_BLOCK_STATUS): bit 0 of a
 * descriptor's flags says the extent is a hole, bit 1 that it reads as
 * zeros. */
#define NBD_META_BASE_ALLOCATION "base:allocation"
#define NBD_STATE_HOLE (1u << 0)
#define NBD_STATE_ZERO (1u << 1)

/* NBD_REPLY_TYPE_BLOCK_STATUS: header, the context id, then descriptors. */
struct nbd_chunk_block_status {
	struct nbd_structured_reply hdr;
	uint32_t context;
} __attribute__((packed));
_Static_assert(sizeof(struct nbd_chunk_block_status) == 24, "chunk_block_status");

struct nbd_block_descriptor {
	uint32_t len;
	uint32_t flags;
} __attribute__((packed));
_Static_assert(sizeof(struct nbd_block_descriptor) == 8, "block_descriptor");

/* NBD_REPLY_TYPE_ERROR with an empty message. */
struct nbd_chunk_error {
	struct nbd_structured_reply hdr;
	uint32_t error;
	uint16_t msg_len;
} __attribute__((packed));
_Static_assert(sizeof(struct nbd_chunk_error) == 26, "chunk_error");

#endif
