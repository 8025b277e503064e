// Two threads hand a byte back and forth through pipes: every round trip is two context
// switches. Prints round trips per second, once a second, for argv[1] seconds.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static int a[2], b[2];
static void *peer(void *x) { char c; for (;;) { if (read(a[0], &c, 1) != 1) break; write(b[1], &c, 1); } return 0; }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int argc, char **argv) {
  int secs = argc > 1 ? atoi(argv[1]) : 10;
  pipe(a); pipe(b);
  pthread_t t; pthread_create(&t, 0, peer, 0);
  double end = now() + secs, mark = now(); long n = 0; char c = 1;
  while (now() < end) {
    write(a[1], &c, 1); read(b[0], &c, 1); n++;
    double t2 = now();
    if (t2 - mark >= 1.0) { printf("%.0f\n", n / (t2 - mark)); fflush(stdout); n = 0; mark = t2; }
  }
  return 0;
}
