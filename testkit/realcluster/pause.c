/* The pod sandbox's process, as upstream's build/pause/linux/pause.c does it: sleep until told
 * to stop, reap any orphan. Built static here so no image is pulled. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; _exit(0); }
static void reap(int sig) { (void)sig; while (waitpid(-1, NULL, WNOHANG) > 0) {} }

int main(void) {
  struct sigaction s = {0};
  s.sa_handler = stop;
  sigaction(SIGINT, &s, NULL);
  sigaction(SIGTERM, &s, NULL);
  s.sa_handler = reap;
  s.sa_flags = SA_NOCLDSTOP;
  sigaction(SIGCHLD, &s, NULL);
  for (;;) pause();
  return 0;
}
