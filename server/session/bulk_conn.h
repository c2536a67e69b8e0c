/*
 * server/session/bulk_conn.h — the inside of a session's bulk connection,
 * shared by bulk.c (the connection: attaching, replacing, what the client
 * sends) and bulk_frames.c (the frames rdevd sends: the writer, the frames
 * kept for the client's next connection). Private to those two files.
 */
#ifndef RDEV_SRV_BULK_CONN_H
#define RDEV_SRV_BULK_CONN_H

#include "session.h"

/* Bulk Writes that ran without their frame, remembered so that their
 * frame is dropped if it comes after all. */
#define GONE_MAX 64u

typedef struct bulk_frame {
  struct bulk_frame *next;
  uint64_t seq;  /* 0: a control frame, freed once sent (or lost) */
  int shown;     /* data shows device memory (zerocopy.h) */
  int sent;      /* sent (or being sent) on the connection attached now */
  uint64_t nth;  /* a Read frame sent: which of the connection's (from 1), the client's count of it */
  int acked;     /* acknowledged while the writer sent it: the writer frees it */
  int queued;    /* its bytes count toward the session's inflight (until first sent) */
  int kept;      /* sent, kept for the client's next connection (counted in c->kept) */
  uint32_t conn; /* the connection it was queued for (a session that does not resume sends it on that one only) */
  int receipt;   /* a RECEIPT (seq 0): the writer fills in the count as it sends it */
  grpc_slice data;
} bulk_frame_t;

typedef struct bulk_in bulk_in_t; /* a bulk Write's bytes, in before its Write ran (bulk.c) */

struct srv_bulk_conn {
  int fd;             /* mu; a thread that uses it holds it (reader_on, sending) */
  uint32_t conn;      /* its number, the client's: a higher one replaces it */
  int local;          /* a unix socket: regions may be registered */
  pthread_t thread;   /* the writer, for the session's life */
  pthread_t reader;   /* what the client sends, one per connection */
  pthread_mutex_t mu; /* the queues and the flags */
  pthread_cond_t cv;  /* the writer's: frames queued, or closing */
  /* Frames not yet sent, and Read frames sent that a resumable session
   * keeps until the client counts them, in queue order (the order they go
   * in on each connection); the next to send (NULL: all sent); busy: the
   * one the writer holds now (bulk_frames.c). */
  bulk_frame_t *head, *tail, *cursor, *busy;
  int keep;             /* the session is resumable: sent Read frames are kept */
  size_t kept;          /* their bytes, at most about KEPT_MAX */
  uint64_t sent, acked; /* Read frames sent on this connection, and acknowledged */
  int closing;          /* the session ends: drop what is queued */
  int failed;           /* a send failed: no more frames */
  int retire;           /* a newer connection takes its place: its threads let go of fd */
  int reader_on;        /* the reader runs */
  int sending;          /* the writer is in a send on fd */
  /* The latest bulk Writes that ran without their frame (it could not
   * come, or they were refused): a DATA of theirs that comes after all is
   * dropped, not kept for a Write that will never take it. (Not a seq
   * high-water mark: threads sharing a session send Writes out of seq
   * order.) */
  uint64_t gone[GONE_MAX];
  unsigned ngone; /* the next slot, round */
  /* Bulk Writes' frames (the reader's side). */
  uint64_t data_in;     /* DATA messages received whole, over the session's connections */
  uint64_t data_told;   /* the count the last RECEIPT sent carried */
  int receipt_queued;   /* a RECEIPT waits for the writer */
  uint64_t lost_ns;     /* a resumable session's: when its reader stopped (no connection since) */
  int gave_up;          /* ...and the next stayed away for the resume window while a Write waited: it ends */
  bulk_in_t *in;        /* kept, in arrival order */
  size_t in_bytes;      /* their bytes, at most about IN_MAX */
  int in_dead;          /* the reader stopped: no frame comes any more */
  pthread_cond_t in_cv; /* the reader waits here for room */
  uint64_t wait_seq;    /* the frame a paused message waits for... */
  void (*resume)(void *);
  void *resume_arg; /* ...and what runs once it is in (or cannot come) */
  /* The Write waiting for its frame (srv_bulk_expect), and where its
   * bytes may go straight: */
  uint64_t expect_seq; /* 0: none */
  void *expect_dst;    /* NULL: staged */
  size_t expect_len;
  int direct; /* the reader is receiving into such a destination now */
};

/* ---- bulk_frames.c ---- */

/* Queues a RECEIPT (rdev/wire.h) of the DATA messages counted, unless one
 * is queued already: it carries the count as it goes. */
void srv_bulk_receipt(srv_session_t *s, struct srv_bulk_conn *c);

/* The writer thread of s's connection (s->bulk), for the session's life;
 * it lets go of its reference of s at the end. */
void *srv_bulk_writer_main(void *arg);
/* Queues data (its reference taken) as frame seq on s's connection c: the
 * connection's number, or 0 when c takes no more frames (data still the
 * caller's). shown: data shows device memory. */
uint32_t srv_bulk_queue_frame(srv_session_t *s, struct srv_bulk_conn *c, uint64_t seq, grpc_slice data, int shown);
/* The client has the first n Read frames sent on c's connection: the kept
 * ones among them go. 0 when it claims frames not sent (malformed). */
int srv_bulk_frames_acked(srv_session_t *s, struct srv_bulk_conn *c, uint64_t n);
/* c->mu held, a new connection in: every frame still there goes again, in
 * order, on it (the client writes each once); the unsent control frames
 * do not (what they answered was lost with the last): they are returned,
 * unlinked, for srv_bulk_frames_free. */
bulk_frame_t *srv_bulk_frames_again_locked(struct srv_bulk_conn *c);
/* Frees the frames of list (unlinked from their connection), and what they count. No lock held. */
void srv_bulk_frames_free(srv_session_t *s, bulk_frame_t *list);
/* zerocopy.h's unpin hook of session arg (a srv_session_t): a fence or a
 * pause is about to wait for shown replies. */
void srv_bulk_unpin(void *arg);

#endif
