// PUB→SUB throughput of 100-byte two-frame messages on libzmq directly: the baseline for
// `bench zmq-pubsub`, which compiles and runs this program and does the same through our
// Swift ZeroMQ layer (Tests/Benchmarks/ZeroMQPubSub.swift). Keep the two structured alike.
//
//   cc -O2 zmq_pubsub.c -lzmq -lpthread -o zmq_pubsub && ./zmq_pubsub [messages]
//
// One context (one I/O thread). The PUB thread binds tcp://127.0.0.1:*, the SUB thread
// connects and subscribes to everything. Slow joiner: the PUB sends probe messages until the
// SUB has received one; only then does the timed run start. High-water marks are 0 (no limit)
// so nothing is dropped, and the SUB checks it received exactly N data messages of a 20-byte
// topic frame and an 80-byte payload frame. Time runs from just before the PUB's first data
// send to the SUB's receipt of the last one. The PUB keeps its socket open until the SUB is
// done, as closing it (LINGER 0) would discard messages still queued.
//
// Prints one line: `received=N seconds=S rate=R pub_cpu_ns=P sub_cpu_ns=Q`: R in messages per
// second; P and Q the CPU time per message of the PUB thread (its sending loop) and of the SUB
// thread (its receiving loop), which tell which side costs what whatever else the machine does.
// Exit status 1 on any error or count mismatch.

#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

enum { TOPIC_SIZE = 20, PAYLOAD_SIZE = 80, RECEIVE_TIMEOUT_MS = 10000 };

static const char PROBE_TOPIC[] = "probe";

static void *context;
static long messages;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bound = PTHREAD_COND_INITIALIZER;
static char endpoint[256];  // set by the PUB thread once bound; guarded by lock

static atomic_bool joined;        // the SUB has received a probe
static atomic_bool failed;        // either side failed: the other stops
static atomic_bool finished;      // the SUB is done: the PUB may close (LINGER 0 drops its queue)
static uint64_t start_ns, end_ns; // read after both threads are joined
static uint64_t pub_cpu_ns, sub_cpu_ns;
static long received;

static uint64_t clock_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void fail(const char *what) {
    fprintf(stderr, "zmq_pubsub: %s: %s\n", what, zmq_strerror(zmq_errno()));
    atomic_store(&failed, 1);
}

static void *publisher(void *unused) {
    (void)unused;
    void *pub = zmq_socket(context, ZMQ_PUB);
    int zero = 0;
    zmq_setsockopt(pub, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(pub, ZMQ_SNDHWM, &zero, sizeof zero);
    char bound_endpoint[256] = "";
    size_t size = sizeof bound_endpoint;
    if (zmq_bind(pub, "tcp://127.0.0.1:*") != 0 ||
        zmq_getsockopt(pub, ZMQ_LAST_ENDPOINT, bound_endpoint, &size) != 0)
        fail("bind");
    pthread_mutex_lock(&lock);
    strcpy(endpoint, atomic_load(&failed) ? "failed" : bound_endpoint);
    pthread_cond_signal(&bound);
    pthread_mutex_unlock(&lock);

    // Slow joiner: probe until the subscription has reached us and a probe got through.
    for (int tries = 0; !atomic_load(&joined) && !atomic_load(&failed); tries++) {
        if (tries == 10000) {  // ~10 s
            fprintf(stderr, "zmq_pubsub: subscriber never joined\n");
            atomic_store(&failed, 1);
            break;
        }
        zmq_send(pub, PROBE_TOPIC, sizeof PROBE_TOPIC - 1, ZMQ_SNDMORE);
        zmq_send(pub, "", 0, 0);
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    }

    char topic[TOPIC_SIZE], payload[PAYLOAD_SIZE];
    memset(topic, 't', sizeof topic);
    memset(payload, 'p', sizeof payload);
    uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    start_ns = clock_ns(CLOCK_MONOTONIC);
    for (long i = 0; i < messages && !atomic_load(&failed); i++) {
        if (zmq_send(pub, topic, sizeof topic, ZMQ_SNDMORE) != sizeof topic ||
            zmq_send(pub, payload, sizeof payload, 0) != sizeof payload) {
            fail("send");
            break;
        }
    }
    pub_cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
    // Closing now would discard what is still queued (LINGER 0): wait for the SUB to finish.
    while (!atomic_load(&finished) && !atomic_load(&failed)) nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    zmq_close(pub);
    return NULL;
}

static void *subscriber(void *connect_to) {
    void *sub = zmq_socket(context, ZMQ_SUB);
    int zero = 0, timeout = RECEIVE_TIMEOUT_MS;
    zmq_setsockopt(sub, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(sub, ZMQ_RCVHWM, &zero, sizeof zero);
    zmq_setsockopt(sub, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "", 0);
    if (zmq_connect(sub, connect_to) != 0) fail("connect");

    zmq_msg_t frame;
    zmq_msg_init(&frame);
    uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    while (received < messages && !atomic_load(&failed)) {
        // Frame 1: the topic; a probe is told apart by its size.
        if (zmq_msg_recv(&frame, sub, 0) < 0) {
            if (zmq_errno() == EINTR) continue;
            fail("receive");
            break;
        }
        size_t topic_size = zmq_msg_size(&frame);
        if (!zmq_msg_more(&frame)) {
            fprintf(stderr, "zmq_pubsub: a one-frame message\n");
            atomic_store(&failed, 1);
            break;
        }
        // Frame 2: the payload (already here: multipart messages arrive whole).
        if (zmq_msg_recv(&frame, sub, 0) < 0) {
            fail("receive");
            break;
        }
        if (topic_size == sizeof PROBE_TOPIC - 1) {
            atomic_store(&joined, 1);
            continue;
        }
        if (topic_size != TOPIC_SIZE || zmq_msg_size(&frame) != PAYLOAD_SIZE || zmq_msg_more(&frame)) {
            fprintf(stderr, "zmq_pubsub: a malformed message\n");
            atomic_store(&failed, 1);
            break;
        }
        received++;
    }
    end_ns = clock_ns(CLOCK_MONOTONIC);
    sub_cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
    atomic_store(&finished, 1);
    zmq_msg_close(&frame);
    zmq_close(sub);
    return NULL;
}

int main(int argc, char **argv) {
    messages = argc > 1 ? atol(argv[1]) : 1000000;
    if (messages <= 0) {
        fprintf(stderr, "usage: %s [messages]\n", argv[0]);
        return 2;
    }
    context = zmq_ctx_new();

    pthread_t pub_thread, sub_thread;
    pthread_create(&pub_thread, NULL, publisher, NULL);
    pthread_mutex_lock(&lock);
    while (endpoint[0] == 0) pthread_cond_wait(&bound, &lock);
    pthread_mutex_unlock(&lock);
    if (!atomic_load(&failed)) pthread_create(&sub_thread, NULL, subscriber, endpoint);
    else sub_thread = pthread_self();
    pthread_join(pub_thread, NULL);
    if (!pthread_equal(sub_thread, pthread_self())) pthread_join(sub_thread, NULL);
    zmq_ctx_term(context);

    if (atomic_load(&failed) || received != messages) {
        fprintf(stderr, "zmq_pubsub: received %ld of %ld messages\n", received, messages);
        return 1;
    }
    double seconds = (double)(end_ns - start_ns) / 1e9;
    printf("received=%ld seconds=%.6f rate=%.0f pub_cpu_ns=%.1f sub_cpu_ns=%.1f\n", received, seconds,
           (double)received / seconds, (double)pub_cpu_ns / received, (double)sub_cpu_ns / received);
    return 0;
}
