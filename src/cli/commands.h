/* commands.h - entry points of moeprobe's subcommands.
 *
 * Each takes the arguments after the subcommand name (argv[0] is the
 * subcommand itself) and returns a process exit code (MP_EXIT_* in err.h, or
 * 128+N when interrupted by signal N). They print their own messages. */
#ifndef MP_COMMANDS_H
#define MP_COMMANDS_H

int cmd_qualify(int argc, char **argv);
int cmd_diagnose(int argc, char **argv);
int cmd_resolve(int argc, char **argv);
int cmd_minimize(int argc, char **argv);
int cmd_soak(int argc, char **argv);
int cmd_scan(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_bisect(int argc, char **argv);

#endif
