/* SPDX-License-Identifier: MIT */
/* Integration helper: the trigger set (triggers/psi.h) on real PSI triggers.
 *
 *   probe-psiset DEADLINE_S FIRES FILE:SPEC...
 *
 * arms each SPEC ("some 50000 2000000") on its pressure FILE, prints "armed" and waits for events
 * until the first trigger has fired FIRES times, every trigger is gone, or DEADLINE_S passed; then
 * takes what is still queued and prints one line per trigger, "<index> fired <n> gone <n>", and
 * exits 0 (2 on a usage or arming error). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/epoll.h>

#include "triggers/psi.h"

#define MAX_TRIGGERS 16

typedef struct Armed {
        int fd;
        unsigned fired;
        unsigned gone;
} Armed;

static void take_all(PsiSet *s) {
        PsiEvent ev;

        while (psi_set_take(s, &ev, 1) == 1) {
                Armed *a = ev.userdata;
                if (ev.gone)
                        a->gone++;
                else
                        a->fired++;
        }
}

int main(int argc, char **argv) {
        Armed t[MAX_TRIGGERS] = {};
        int n = argc - 3;
        PsiSet *s;
        int r;

        if (argc < 4 || n > MAX_TRIGGERS) {
                fprintf(stderr, "usage: %s DEADLINE_S FIRES FILE:SPEC...\n", argv[0]);
                return 2;
        }
        time_t deadline = time(NULL) + atoi(argv[1]);
        unsigned fires = (unsigned) atoi(argv[2]);
        r = psi_set_new(&s);
        if (r < 0) {
                fprintf(stderr, "psi_set_new: %s\n", strerror(-r));
                return 2;
        }
        for (int i = 0; i < n; i++) {
                char *arg = argv[i + 3], *colon = strchr(arg, ':');
                if (!colon) {
                        fprintf(stderr, "no ':' in %s\n", arg);
                        return 2;
                }
                *colon = '\0';
                t[i].fd = open(arg, O_RDWR | O_NONBLOCK | O_CLOEXEC);
                if (t[i].fd < 0 || write(t[i].fd, colon + 1, strlen(colon + 1) + 1) < 0) {
                        fprintf(stderr, "arming %s on %s: %m\n", colon + 1, arg);
                        return 2;
                }
                if (psi_set_add(s, t[i].fd, EPOLLPRI, &t[i]) < 0) {
                        fprintf(stderr, "psi_set_add: %m\n");
                        return 2;
                }
        }
        printf("armed\n");
        fflush(stdout);

        for (;;) {
                int gone = 0;
                for (int i = 0; i < n; i++)
                        gone += t[i].gone > 0;
                if (t[0].fired >= fires || gone == n || time(NULL) >= deadline)
                        break;
                struct pollfd p = { .fd = psi_set_notify_fd(s), .events = POLLIN };
                if (poll(&p, 1, 500) < 0 && errno != EINTR)
                        return 2;
                take_all(s);
        }
        /* A second report of a gone trigger would be a bug: give it a moment to show. */
        struct pollfd p = { .fd = psi_set_notify_fd(s), .events = POLLIN };
        (void) poll(&p, 1, 200);
        take_all(s);
        for (int i = 0; i < n; i++)
                printf("%d fired %u gone %u\n", i, t[i].fired, t[i].gone);
        psi_set_free(s);
        for (int i = 0; i < n; i++)
                close(t[i].fd);
        return 0;
}
