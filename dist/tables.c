/* dist/tables.c — prints the option, command and profile-key tables, for what
 * is generated from them or checked against them (shell completion, the man
 * page test). Not installed.
 *
 * Output, one row a line, fields separated by one tab:
 *   command NAME
 *   option  NAME METAVAR(or -) COMMAND,COMMAND...
 *   key     SECTION KEY
 */
#include <stdio.h>

#include "config/config.h"
#include "config/policy.h"

int main(void)
{
        const char *name, *metavar, *cname, *section, *key;
        enum nsb_cmd cmd;
        unsigned cmds;

        for (size_t i = 0; cfg_command_row(i, &name, &cmd); i++)
                printf("command\t%s\n", name);
        for (size_t i = 0; cfg_option_row(i, &name, &metavar, &cmds); i++) {
                const char *sep = "";

                printf("option\t%s\t%s\t", name, metavar ? metavar : "-");
                for (size_t k = 0; cfg_command_row(k, &cname, &cmd); k++)
                        if (cmds & (1u << cmd)) {
                                printf("%s%s", sep, cname);
                                sep = ",";
                        }
                printf("\n");
        }
        for (size_t i = 0; cfg_profile_key_row(i, &section, &key); i++)
                printf("key\t%s\t%s\n", section, key);
        return ferror(stdout) || fflush(stdout) ? 1 : 0;
}
