/* resolved.c - what the engine resolved beyond the target's MoE, dense and
 * attention selections (model/attempt.h): the drafter's own MoE selection,
 * other selection lines, tallies, the device, the fatal messages; and their
 * JSON form, kept in the store as one column. */
#include "compat.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "model/attempt.h"
#include "model/resolved_int.h"
#include "vec.h"
#include "xalloc.h"

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

void mp_resolved_add_sel(struct mp_resolved *v, const char *what, const char *value, long line)
{
    v->other = xreallocarray(v->other, v->nother + 1, sizeof(*v->other));
    v->other[v->nother++] = (struct mp_sel){xstrdup(what), xstrdup(value), line};
}

void mp_resolved_add_tally(struct mp_resolved *v, const char *name, long count, long first_line)
{
    v->tallies = xreallocarray(v->tallies, v->ntallies + 1, sizeof(*v->tallies));
    v->tallies[v->ntallies++] = (struct mp_tally){xstrdup(name), count, first_line};
}

void mp_resolved_more_release(struct mp_resolved *v)
{
    free(v->moe_kind);
    free(v->device);
    free(v->drafter.moe_backend);
    free(v->drafter.moe_kind);
    mp_strv_release(&v->drafter.moe_candidates);
    for (size_t i = 0; i < v->nother; i++) {
        free(v->other[i].what);
        free(v->other[i].value);
    }
    free(v->other);
    for (size_t i = 0; i < v->ntallies; i++)
        free(v->tallies[i].name);
    free(v->tallies);
    mp_strv_release(&v->fatal_messages);
}

void mp_resolved_more_copy(struct mp_resolved *dst, const struct mp_resolved *src)
{
    dst->moe_kind = dup_or_null(src->moe_kind);
    dst->device = dup_or_null(src->device);
    dst->drafter.loaded_line = src->drafter.loaded_line;
    dst->drafter.line = src->drafter.line;
    dst->drafter.moe_backend = dup_or_null(src->drafter.moe_backend);
    dst->drafter.moe_kind = dup_or_null(src->drafter.moe_kind);
    memset(&dst->drafter.moe_candidates, 0, sizeof(dst->drafter.moe_candidates));
    for (size_t i = 0; i < src->drafter.moe_candidates.n; i++)
        mp_strv_push(&dst->drafter.moe_candidates, src->drafter.moe_candidates.v[i]);
    dst->other = NULL;
    dst->nother = 0;
    for (size_t i = 0; i < src->nother; i++)
        mp_resolved_add_sel(dst, src->other[i].what, src->other[i].value, src->other[i].line);
    dst->tallies = NULL;
    dst->ntallies = 0;
    for (size_t i = 0; i < src->ntallies; i++)
        mp_resolved_add_tally(dst, src->tallies[i].name, src->tallies[i].count,
                              src->tallies[i].first_line);
    memset(&dst->fatal_messages, 0, sizeof(dst->fatal_messages));
    for (size_t i = 0; i < src->fatal_messages.n; i++)
        mp_strv_push(&dst->fatal_messages, src->fatal_messages.v[i]);
}

static cJSON *jstr(const char *s)
{
    return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static cJSON *strv_json(const struct mp_strv *v)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < v->n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(v->v[i]));
    return a;
}

static void drafter_to(cJSON *o, const struct mp_resolved_drafter *d)
{
    if (!d->loaded_line)
        return;
    cJSON *j = cJSON_AddObjectToObject(o, "drafter");
    cJSON_AddNumberToObject(j, "loaded_line", (double)d->loaded_line);
    cJSON_AddNumberToObject(j, "line", (double)d->line);
    cJSON_AddItemToObject(j, "moe_backend", jstr(d->moe_backend));
    cJSON_AddItemToObject(j, "moe_kind", jstr(d->moe_kind));
    cJSON_AddItemToObject(j, "moe_candidates", strv_json(&d->moe_candidates));
}

char *mp_resolved_more_to_json(const struct mp_resolved *v)
{
    if (!v->moe_kind && !v->device && !v->drafter.loaded_line && !v->nother && !v->ntallies &&
        !v->fatal_messages.n)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "moe_kind", jstr(v->moe_kind));
    cJSON_AddItemToObject(o, "device", jstr(v->device));
    drafter_to(o, &v->drafter);
    cJSON *a = cJSON_AddArrayToObject(o, "other");
    for (size_t i = 0; i < v->nother; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToObject(e, "what", jstr(v->other[i].what));
        cJSON_AddItemToObject(e, "value", jstr(v->other[i].value));
        cJSON_AddNumberToObject(e, "line", (double)v->other[i].line);
        cJSON_AddItemToArray(a, e);
    }
    cJSON *t = cJSON_AddArrayToObject(o, "tallies");
    for (size_t i = 0; i < v->ntallies; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToObject(e, "name", jstr(v->tallies[i].name));
        cJSON_AddNumberToObject(e, "count", (double)v->tallies[i].count);
        cJSON_AddNumberToObject(e, "first_line", (double)v->tallies[i].first_line);
        cJSON_AddItemToArray(t, e);
    }
    cJSON_AddItemToObject(o, "fatal_messages", strv_json(&v->fatal_messages));
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static const char *sget(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static long nget(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? (long)v->valuedouble : 0;
}

static void strv_from(struct mp_strv *out, const cJSON *a)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, a)
        if (cJSON_IsString(it))
            mp_strv_push(out, it->valuestring);
}

static void drafter_from(struct mp_resolved_drafter *d, const cJSON *j)
{
    if (!cJSON_IsObject(j))
        return;
    d->loaded_line = nget(j, "loaded_line");
    d->line = nget(j, "line");
    d->moe_backend = dup_or_null(sget(j, "moe_backend"));
    d->moe_kind = dup_or_null(sget(j, "moe_kind"));
    strv_from(&d->moe_candidates, cJSON_GetObjectItemCaseSensitive(j, "moe_candidates"));
}

void mp_resolved_more_from_json(struct mp_resolved *v, const char *json)
{
    cJSON *o = json ? cJSON_Parse(json) : NULL;
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return;
    }
    v->moe_kind = dup_or_null(sget(o, "moe_kind"));
    v->device = dup_or_null(sget(o, "device"));
    drafter_from(&v->drafter, cJSON_GetObjectItemCaseSensitive(o, "drafter"));
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(o, "other"))
        if (sget(it, "what") && sget(it, "value"))
            mp_resolved_add_sel(v, sget(it, "what"), sget(it, "value"), nget(it, "line"));
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(o, "tallies"))
        if (sget(it, "name"))
            mp_resolved_add_tally(v, sget(it, "name"), nget(it, "count"), nget(it, "first_line"));
    strv_from(&v->fatal_messages, cJSON_GetObjectItemCaseSensitive(o, "fatal_messages"));
    cJSON_Delete(o);
}
