/* SPDX-License-Identifier: MIT */
/* Command line: the agent, `snapshot`, `validate`, `check`, `show`. Exit codes: 0 ok, 1 runtime failure, 2 usage or
 * config error. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/parse.h"
#include "base/timeutil.h"
#include "cmd/check.h"
#include "cmd/show.h"
#include "cmd/snapshot-cmd.h"
#include "cmd/stacks-cmd.h"
#include "cmd/validate.h"
#include "config/config.h"
#include "config/keys.h"
#include "probes/sysroot.h"
#include "probes/system.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

static void help(FILE *f) {
        fputs("Usage:\n"
              "  psidiag [--config FILE] [--output PATH] [--enable-delayacct] [--log-level LEVEL]\n"
              "  psidiag snapshot [CGROUP | --pid PID] [--resource cpu|memory|io|irq] [--sample-ms N] [--top N]\n"
              "                   [--stacks-hz N] [--enable-delayacct]\n"
              "  psidiag validate FILE\n"
              "  psidiag check\n"
              "  psidiag show [FILE]\n"
              "  psidiag stacks [--svg] [--id ID] [FILE]\n"
              "  psidiag --help | --version\n"
              "\n"
              "Arms PSI triggers on /proc/pressure and cgroup2 *.pressure files; when one fires, measures\n"
              "the cgroup's threads with taskstats delay accounting and writes one JSON incident per line\n"
              "naming the most-delayed processes. An OOM kill in a watched cgroup becomes an incident of\n"
              "type \"oom\" naming the victim and the pressure incidents that led to it (from /dev/kmsg).\n"
              "A watch selects the node, a cgroup (a path or glob), or containers by their name, image\n"
              "or Kubernetes pod (globs: \"container\", \"image\", \"pod\": \"NAMESPACE/NAME\").\n"
              "\n"
              "Agent options:\n"
              "  -c, --config FILE        JSON config (default: node-wide cpu, memory and io triggers,\n"
              "                           incidents on stdout)\n"
              "  -o, --output PATH        write incidents to PATH (\"-\" for stdout, \"journal\" for the\n"
              "                           systemd journal), for every watch\n"
              "      --enable-delayacct   set kernel.task_delayacct=1 at start\n"
              "      --log-level LEVEL    error, warning, info (default) or debug; logs go to stderr\n"
              "      --check-config       check the --config file as `validate` does, and exit\n"
              "The config key output_format \"otlp\" writes each incident to file and stdout outputs\n"
              "as one OTLP/JSON ExportLogsServiceRequest line (the OpenTelemetry Collector's\n"
              "otlpjsonfile receiver reads it) instead of an incident line (\"incident\", the default).\n"
              "\n"
              "snapshot: one incident of type \"snapshot\" now, no trigger. CGROUP is relative to the\n"
              "cgroup2 mount; without it the whole host is measured.\n"
              "      --resource RES       rank by RES's delays, report its stall growth and who is\n"
              "                           causing it (culprits: cpu, memory, io)\n"
              "                           (default: rank by all delays summed)\n"
              "      --sample-ms N        sample length in ms, 0-60000 (default 1000); 0: one snapshot,\n"
              "                           delays are each process's totals since it began\n"
              "      --top N              processes to report, 1-1000 (default 10)\n"
              "      --stacks-hz N        on-cpu stacks over the sample, N a second on each cpu, 0-1000\n"
              "                           (default 0: none); of the culprit scope with --resource\n"
              "      --pid PID            one process and every delayed thread of it (as getdelays -p/-t)\n"
              "\n"
              "validate: check a config file; prints the triggers as they would be armed.\n"
              "\n"
              "check: what the agent needs from this host (PSI, cgroup2, taskstats, delay accounting,\n"
              "capabilities, /proc, /dev/kmsg), one line each: ok, warn (works, with the stated limit)\n"
              "or fail. Exit 0 when nothing fails, 1 otherwise.\n"
              "\n"
              "show: incident lines from FILE (or stdin) as a compact view for a terminal: time,\n"
              "trigger, pressure, states and the most delayed processes with their dominant delay.\n"
              "\n"
              "stacks: the stacks of incident lines from FILE (or stdin), taken with stacks_hz or\n"
              "snapshot --stacks-hz, in the folded format flame graph tools read\n"
              "(\"COMM;OUTERMOST;...;INNERMOST COUNT\", kernel frames marked _[k]).\n"
              "      --svg                one flame graph of them, a self-contained SVG\n"
              "      --id ID              only the incident of that id\n"
              "\n"
              "Signals: SIGINT/SIGTERM stop (a sample in flight is dropped, and logged);\n"
              "SIGHUP reopens output files and reloads the config (a bad one is refused).\n"
              "Exit status: 0 success, 1 runtime failure, 2 usage or config error.\n",
              f);
}

enum {
        ARG_ENABLE_DELAYACCT = 0x100,
        ARG_LOG_LEVEL,
        ARG_RESOURCE,
        ARG_SAMPLE_MS,
        ARG_TOP,
        ARG_CHECK_CONFIG,
        ARG_PID,
        ARG_STACKS_HZ,
        ARG_SVG,
        ARG_ID,
};

static const struct option options[] = {
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { "config", required_argument, NULL, 'c' },
        { "output", required_argument, NULL, 'o' },
        { "enable-delayacct", no_argument, NULL, ARG_ENABLE_DELAYACCT },
        { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
        { "resource", required_argument, NULL, ARG_RESOURCE },
        { "sample-ms", required_argument, NULL, ARG_SAMPLE_MS },
        { "top", required_argument, NULL, ARG_TOP },
        { "check-config", no_argument, NULL, ARG_CHECK_CONFIG },
        { "pid", required_argument, NULL, ARG_PID },
        { "stacks-hz", required_argument, NULL, ARG_STACKS_HZ },
        { "svg", no_argument, NULL, ARG_SVG },
        { "id", required_argument, NULL, ARG_ID },
        {},
};

typedef struct Args {
        const char *command; /* NULL: the agent */
        const char *operand;
        const char *config, *output;
        bool enable_delayacct;
        bool check_config;
        pid_t pid;
        bool have_resource, have_sample_ms, have_top, have_stacks_hz;
        int resource;
        uint64_t sample_ms;
        unsigned top;
        unsigned stacks_hz;
        bool svg;       /* stacks --svg */
        const char *id; /* stacks --id */
} Args;

_printf_(1, 2) static int usage_error(const char *fmt, ...) {
        va_list ap;

        fputs("psidiag: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputs("\nTry 'psidiag --help'.\n", stderr);
        return -EINVAL;
}

/* A positional word: the command, then its operand; options may follow. */
static int parse_word(const char *word, Args *args) {
        if (!args->command && !args->operand &&
            (strcmp(word, "snapshot") == 0 || strcmp(word, "validate") == 0 || strcmp(word, "check") == 0 ||
             strcmp(word, "show") == 0 || strcmp(word, "stacks") == 0))
                args->command = word;
        else if (args->command && !args->operand)
                args->operand = word;
        else
                return usage_error("unexpected argument '%s'", word);
        return 1;
}

/* The options of `psidiag snapshot`: its resource, sample length, top and pid. */
static int parse_snapshot_option(int c, const char *arg, Args *args) {
        uint64_t u;

        switch (c) {
        case ARG_RESOURCE:
                args->resource = psi_resource_from_string(arg);
                if (args->resource < 0)
                        return usage_error("--resource must be cpu, memory, io or irq, not '%s'", arg);
                args->have_resource = true;
                return 1;
        case ARG_SAMPLE_MS:
                if (parse_uint64(arg, &u) < 0 || u > CONFIG_SAMPLE_MS_MAX)
                        return usage_error("--sample-ms must be a whole number from 0 to 60000, not '%s'", arg);
                args->sample_ms = u;
                args->have_sample_ms = true;
                return 1;
        case ARG_PID:
                if (parse_uint64(arg, &u) < 0 || u < 1 || u > INT32_MAX)
                        return usage_error("--pid must be a process id, not '%s'", arg);
                args->pid = (pid_t) u;
                return 1;
        case ARG_STACKS_HZ:
                if (parse_uint64(arg, &u) < 0 || u > CONFIG_STACKS_HZ_MAX)
                        return usage_error("--stacks-hz must be a whole number from 0 to 1000, not '%s'", arg);
                args->stacks_hz = (unsigned) u;
                args->have_stacks_hz = true;
                return 1;
        default: /* ARG_TOP */
                if (parse_uint64(arg, &u) < 0 || u < 1 || u > CONFIG_TOP_MAX)
                        return usage_error("--top must be a whole number from 1 to 1000, not '%s'", arg);
                args->top = (unsigned) u;
                args->have_top = true;
                return 1;
        }
}

/* One option (getopt_long's c); returns as parse_args() does. */
static int parse_option(int c, const char *arg, Args *args) {
        switch (c) {
        case 'h':
                help(stdout);
                return 0;
        case 'V':
                printf("psidiag %s\n", PSIDIAG_VERSION);
                return 0;
        case 'c':
                args->config = arg;
                return 1;
        case 'o':
                args->output = arg;
                return 1;
        case ARG_ENABLE_DELAYACCT:
                args->enable_delayacct = true;
                return 1;
        case ARG_LOG_LEVEL: {
                LogLevel l = log_level_from_string(arg);
                if (l < 0)
                        return usage_error("--log-level must be error, warning, info or debug, not '%s'", arg);
                log_set_level(l);
                return 1;
        }
        case ARG_CHECK_CONFIG:
                args->check_config = true;
                return 1;
        case ARG_SVG:
                args->svg = true;
                return 1;
        case ARG_ID:
                args->id = arg;
                return 1;
        case ARG_RESOURCE:
        case ARG_SAMPLE_MS:
        case ARG_PID:
        case ARG_TOP:
        case ARG_STACKS_HZ:
                return parse_snapshot_option(c, arg, args);
        default:
                fputs("Try 'psidiag --help'.\n", stderr);
                return -EINVAL;
        }
}

/* The options that belong to one command given to another. */
static int check_args(const Args *args) {
        if (!args->command || strcmp(args->command, "snapshot") != 0) {
                if (args->have_resource || args->have_sample_ms || args->have_top || args->have_stacks_hz || args->pid)
                        return usage_error("%s", "--resource, --sample-ms, --top, --stacks-hz and --pid belong to "
                                                 "'psidiag snapshot'");
        }
        if ((args->svg || args->id) && (!args->command || strcmp(args->command, "stacks") != 0))
                return usage_error("%s", "--svg and --id belong to 'psidiag stacks'");
        if (args->command) {
                if (args->config || args->output)
                        return usage_error("--config and --output belong to the agent, not to '%s'", args->command);
                if (strcmp(args->command, "validate") == 0 && !args->operand)
                        return usage_error("%s", "validate needs a FILE");
                if (strcmp(args->command, "check") == 0 && (args->operand || args->enable_delayacct))
                        return usage_error("%s", "check takes no arguments");
        }
        return 1;
}

/* Returns 1 to continue, 0 to exit 0 (help/version printed), -EINVAL for a usage error. */
static int parse_args(int argc, char **argv, Args *args) {
        int c, r;

        *args = (Args) { .resource = -1,
                         .sample_ms = config_keys_default("sample_ms"),
                         .top = (unsigned) config_keys_default("top") };
        while ((c = getopt_long(argc, argv, "+hVc:o:", options, NULL)) >= 0 || optind < argc) {
                r = c < 0 ? parse_word(argv[optind++], args) : parse_option(c, optarg, args);
                if (r <= 0)
                        return r;
        }
        return check_args(args);
}

int main(int argc, char **argv) {
        Args args;
        int r;

        r = parse_args(argc, argv, &args);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : 0;

        /* --check-config: what `validate` does, for the file the agent would load. */
        if (!args.command && args.check_config) {
                if (!args.config) {
                        usage_error("%s", "--check-config needs --config FILE");
                        return EXIT_USAGE;
                }
                return validate_run(args.config);
        }
        if (!args.command)
                return agent_run(&(AgentOptions) {
                        .config_path = args.config,
                        .output = args.output,
                        .enable_delayacct = args.enable_delayacct,
                });
        if (strcmp(args.command, "validate") == 0)
                return validate_run(args.operand);
        if (strcmp(args.command, "check") == 0)
                return check_run();
        if (strcmp(args.command, "show") == 0)
                return show_run(args.operand);
        if (strcmp(args.command, "stacks") == 0)
                return stacks_cmd_run(&(StacksCmdOptions) { .path = args.operand, .svg = args.svg, .id = args.id });

        if (args.operand && args.pid) {
                usage_error("%s", "snapshot takes a CGROUP or --pid, not both");
                return EXIT_USAGE;
        }
        if (args.operand && cgroup_path_validate(args.operand) < 0) {
                usage_error("CGROUP '%s' must be a path relative to the cgroup2 mount, without '.' or '..'",
                            args.operand);
                return EXIT_USAGE;
        }
        return snapshot_cmd_run(&(SnapshotCmdOptions) {
                .cgroup = args.operand,
                .resource = args.resource,
                .sample_ms = args.sample_ms,
                .top = args.top,
                .stacks_hz = args.stacks_hz,
                .pid = args.pid,
                .enable_delayacct = args.enable_delayacct,
        });
}
