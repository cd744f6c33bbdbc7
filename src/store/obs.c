/* obs.c - an attempt's observations (model/attempt.h struct
 * mp_attempt_obs) as the JSON text of attempts.observations (schema v14):
 * what a newer moeprobe judges the attempt's failure from again
 * (verdict/classify.h). Every string is masked before it is written. */
#include "store/internal.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

static void add_str(cJSON *j, const char *k, const struct mp_store_mask *m, const char *v)
{
    if (!v)
        return;
    char *t = mp_store_mask_apply(m, v, strlen(v), false, NULL);
    cJSON_AddStringToObject(j, k, t);
    free(t);
}

char *mp_store_obs_json(const struct mp_store_mask *m, const struct mp_attempt_obs *o)
{
    if (!o->recorded)
        return NULL;
    cJSON *j = cJSON_CreateObject();
    add_str(j, "seen", m, mp_seen_name(o->seen));
    add_str(j, "seen_message", m, o->seen_message);
    cJSON_AddNumberToObject(j, "announce_line", (double)o->announce_line);
    cJSON_AddBoolToObject(j, "died_early", o->died_early);
    cJSON_AddBoolToObject(j, "exited", o->exited);
    cJSON_AddNumberToObject(j, "exit_status", o->exit_status);
    cJSON_AddNumberToObject(j, "lines_after_exit", (double)o->lines_after_exit);
    if (o->crash) {
        cJSON *c = cJSON_AddObjectToObject(j, "crash");
        add_str(c, "class", m, o->crash_class);
        add_str(c, "message", m, o->crash_message);
        add_str(c, "launch_site", m, o->crash_launch_site);
        cJSON_AddNumberToObject(c, "line", (double)o->crash_line);
        cJSON_AddBoolToObject(c, "engine_dead", o->crash_engine_dead);
        cJSON *s = cJSON_AddArrayToObject(c, "sites");
        for (size_t i = 0; i < o->crash_sites.n; i++) {
            char *t = mp_store_mask_apply(m, o->crash_sites.v[i], strlen(o->crash_sites.v[i]), false, NULL);
            cJSON_AddItemToArray(s, cJSON_CreateString(t));
            free(t);
        }
    }
    add_str(j, "startup_error", m, o->startup_error);
    cJSON_AddNumberToObject(j, "startup_error_line", (double)o->startup_error_line);
    add_str(j, "error_quote", m, o->error_quote);
    cJSON_AddNumberToObject(j, "last_error_line", (double)o->last_error_line);
    char *t = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    char *out = xstrdup(t);
    cJSON_free(t);
    return out;
}

static char *get_str(const cJSON *j, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);
    return cJSON_IsString(v) ? xstrdup(v->valuestring) : NULL;
}

static double get_num(const cJSON *j, const char *k, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static bool get_bool(const cJSON *j, const char *k)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, k));
}

void mp_store_obs_read(struct mp_attempt_obs *o, const char *text)
{
    mp_attempt_obs_release(o);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    if (!cJSON_IsObject(j)) { /* NULL (an older moeprobe's row) or damaged: not recorded */
        cJSON_Delete(j);
        return;
    }
    o->recorded = true;
    char *seen = get_str(j, "seen");
    o->seen = mp_seen_from_name(seen);
    free(seen);
    o->seen_message = get_str(j, "seen_message");
    o->announce_line = (long)get_num(j, "announce_line", 0);
    o->died_early = get_bool(j, "died_early");
    o->exited = get_bool(j, "exited");
    o->exit_status = (int)get_num(j, "exit_status", -1);
    o->lines_after_exit = (long)get_num(j, "lines_after_exit", 0);
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "crash");
    if (cJSON_IsObject(c)) {
        o->crash = true;
        o->crash_class = get_str(c, "class");
        o->crash_message = get_str(c, "message");
        o->crash_launch_site = get_str(c, "launch_site");
        o->crash_line = (long)get_num(c, "line", 0);
        o->crash_engine_dead = get_bool(c, "engine_dead");
        const cJSON *s, *sites = cJSON_GetObjectItemCaseSensitive(c, "sites");
        cJSON_ArrayForEach(s, sites)
            if (cJSON_IsString(s))
                mp_strv_push(&o->crash_sites, s->valuestring);
    }
    o->startup_error = get_str(j, "startup_error");
    o->startup_error_line = (long)get_num(j, "startup_error_line", 0);
    o->error_quote = get_str(j, "error_quote");
    o->last_error_line = (long)get_num(j, "last_error_line", 0);
    cJSON_Delete(j);
}
