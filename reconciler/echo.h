/* Writes the manager cache has not echoed yet. A reconcile diffs what a
 * worker says against the manager object in the cache; until the watch
 * brings back a write, the next reconcile computes the same patch again
 * (the remote job's status mirrored three times in a row was seen). This
 * remembers, per object, the last patch written and the resourceVersion
 * the server answered, so that patch is not sent again while the cached
 * object is older than that answer.
 *
 * resourceVersions are compared as integers (the API server's are etcd
 * revisions), as the quota gate's assumptions are (gate.c). An entry older
 * than RC_ECHO_MAX_MS no longer counts, so a cache that never catches up
 * costs one repeated write a minute, never a lost one.
 *
 * A write can also leave the server's answer (the object as written) for
 * the next reconcile to work from at once, before the watch brings it:
 * the quota gate's reservation, whose dispatch would otherwise wait one
 * watch hop (rc_echo_note_answer, rc_echo_take_answer).
 *
 * Ownership: the set copies keys, keeps a hash of each patch and a
 * reference to each answer until it is taken, replaced or swept.
 * Thread-safety: every function may be called from any thread. */
#ifndef MKUEUE_RC_ECHO_H
#define MKUEUE_RC_ECHO_H

#include <jansson.h>

#define RC_ECHO_MAX_MS 60000

struct rc_echo;

struct rc_echo *rc_echo_new(void);    /* NULL on allocation failure */
void rc_echo_free(struct rc_echo *e); /* NULL is a no-op */

/* A resourceVersion as a number (the API server's are etcd revisions; 0
 * when NULL), to tell which of two states of an object is newer. */
long long rc_rv_number(const char *rv);

/* 1 when `patch` was the last one written for key, the server answered a
 * resourceVersion newer than cached_rv (the cached object's), and not more
 * than RC_ECHO_MAX_MS before now_ms: sending it again would change
 * nothing. Else 0. */
int rc_echo_pending(struct rc_echo *e, const char *key, const json_t *patch, const char *cached_rv,
                    long long now_ms);

/* Notes that `patch` was written for key at now_ms and the server answered
 * resourceVersion rv (NULL: forgets key). Out of memory forgets key too:
 * the patch may then be sent again, as before. */
void rc_echo_note(struct rc_echo *e, const char *key, const json_t *patch, const char *rv,
                  long long now_ms);

/* rc_echo_note, and keeps `answer` (a reference is taken; NULL keeps
 * none): what the server answered, whole or as a cache record (pack.h). */
void rc_echo_note_answer(struct rc_echo *e, const char *key, const json_t *patch, const char *rv,
                         json_t *answer, long long now_ms);

/* The answer kept for key, taken (the caller owns it): returned when the
 * cache (cached_rv) is still older than it and it is not older than
 * RC_ECHO_MAX_MS, else dropped and NULL. Taken either way, so one
 * reconcile works from it; the entry stays, and rc_echo_behind holds the
 * next ones back until the cache shows the write. */
json_t *rc_echo_take_answer(struct rc_echo *e, const char *key, const char *cached_rv,
                            long long now_ms);

/* 1 when the last write noted for key was answered with a resourceVersion
 * newer than cached_rv, not more than RC_ECHO_MAX_MS before now_ms,
 * whatever the patch: the cache has not shown our own last write yet, and
 * a plan made from it would repeat a write or fail its precondition. */
int rc_echo_behind(struct rc_echo *e, const char *key, const char *cached_rv, long long now_ms);

/* When the last patch for key was written (monotonic ms, as given to
 * rc_echo_note), 0 when none is remembered: the batch window of a running
 * job's status copies (dispatch.c). */
long long rc_echo_written_ms(struct rc_echo *e, const char *key);

/* The same for a worker's cache and our deletes: notes that a delete of
 * the object with uid was answered (done, or gone already) at now_ms. */
void rc_echo_note_deleted(struct rc_echo *e, const char *uid, long long now_ms);
/* 1 when the object with uid was noted deleted not more than
 * RC_ECHO_MAX_MS before now_ms: a cache still showing it is behind our
 * delete, and deleting it again would only cost a call. */
int rc_echo_deleted(struct rc_echo *e, const char *uid, long long now_ms);

/* Entries held (for tests and the memory figures). */
size_t rc_echo_len(struct rc_echo *e);

#endif
