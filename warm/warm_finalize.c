/* warm/warm_finalize.c — a warm job's finalisation of sys.modules and of
 * the modules' globals, in C (warm_finalize.h). */
#include "warm/warm_finalize.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Whether dicts @d and @was hold the very same keys and values, in the
 * same order: walked side by side, no lookup. A copy of a dict that was
 * left alone (dict(d) keeps d's order) is; a dict with a key set, added,
 * deleted or put back is not. */
static int same_entries(const struct pyapi *py, pyobj *d, pyobj *was)
{
        ssize_t i = 0, j = 0;
        pyobj *k, *v, *wk, *wv;

        while (py->dict_next(d, &i, &k, &v))
                if (!py->dict_next(was, &j, &wk, &wv) || k != wk || v != wv)
                        return 0;
        return !py->dict_next(was, &j, &wk, &wv);
}

static bool is_str_exact(const struct pyapi *py, pyobj *obj)
{
        pyobj *t = py->type(obj);

        py->decref(t);  /* the type outlives obj, which holds it */
        return t == py->str_type;
}

/* The keys of dict @d whose value is not the very object dict @was has for
 * them, in @d's order. Read with borrowed references: no object's count is
 * written, so a dict of the zygote's is compared without copying a page of
 * what it holds; and one the job left alone costs no lookup. */
static pyobj *changed_keys(const struct pyapi *py, pyobj *d, pyobj *was)
{
        pyobj *keys = py->list_new(0), *k, *v;
        ssize_t pos = 0;

        if (keys && same_entries(py, d, was))
                return keys;
        /* a key not exactly a str (a job's subclass) is listed unread:
         * looking it up would run its __hash__ and __eq__, which cold
         * never calls here */
        while (keys && py->dict_next(d, &pos, &k, &v))
                if ((!is_str_exact(py, k) || py->dict_get(was, k) != v) && py->list_append(keys, k) < 0) {
                        py->decref(keys);
                        keys = NULL;
                }
        return keys;
}

/* The 8 bytes at offset @at of object @obj: a dict's version tag where
 * find_dict_tag found it. */
static uint64_t word_at(pyobj *obj, size_t at)
{
        uint64_t w;

        memcpy(&w, (const char *) obj + at, sizeof w);
        return w;
}

static uint64_t dict_tag(const struct pyapi *py, pyobj *d)
{
        return word_at(d, py->dict_tag);
}

/* changed_keys of each pair of the tuples @ds and @wases. */
pyobj *finalize_changed_keys_each(const struct pyapi *py, pyobj *ds, pyobj *wases)
{
        ssize_t n = py->tuple_size(ds);
        pyobj *all = py->list_new(0);

        for (ssize_t i = 0; all && i < n; i++) {
                pyobj *keys = changed_keys(py, py->tuple_item(ds, i), py->tuple_item(wases, i));

                if (!keys || py->list_append(all, keys) < 0) {
                        py->decref(all);
                        all = NULL;
                }
                if (keys)
                        py->decref(keys);
        }
        return all;
}

/* finalize_remove_modules, as CPython 3.7-3.13 walks sys.modules at its
 * exit: each module's entry set to None in the dict's order, and a weak
 * reference to the module kept, in a list the harness clears the modules
 * of later (last first). A module of the zygote's (its address a key of
 * @zygote, whose value is its index in the harness's tables) is kept as
 * that index: the harness holds it, so nothing of the job runs when its
 * entry goes, and no weak reference to it is made. A job's module that
 * nothing else holds goes here, its finalisers run from C. Errors are
 * reported as unraisable, and the walk goes on, as there. */
pyobj *finalize_remove_modules(const struct pyapi *py, pyobj *modules, pyobj *zygote)
{
        pyobj *alive = py->list_new(0), *name, *mod;
        ssize_t pos = 0;

        while (alive && py->dict_next(modules, &pos, &name, &mod)) {
                pyobj *addr, *kept;

                if (!pyapi_is_a(py, mod, py->module_type))
                        continue;
                addr = py->from_ptr(mod);
                kept = addr ? py->dict_get(zygote, addr) : NULL;
                if (kept)
                        py->incref(kept);
                else
                        kept = py->weakref_new(mod, NULL);
                if (addr)
                        py->decref(addr);
                if (!kept || py->list_append(alive, kept) < 0)
                        py->unraisable(NULL);
                if (kept)
                        py->decref(kept);
                /* borrowed, as CPython's own walk: a count written here
                 * would copy the page of every name of the zygote's */
                if (py->setitem(modules, name, py->none) < 0)
                        py->unraisable(NULL);
        }
        return alive;
}

/* Whether @key is one a pass of _PyModule_ClearDict sets to None: a str
 * (a subclass too, read as C reads it, no method of its called), in the
 * @first pass a name with one leading underscore, in the second any but
 * "__builtins__". */
static bool cleared_in_pass(const struct pyapi *py, pyobj *key, bool first)
{
        pyobj *t = py->type(key);
        const bool str = (py->type_flags(t) & (1UL << 28)) != 0;   /* Py_TPFLAGS_UNICODE_SUBCLASS */
        ssize_t n;
        uint32_t c0, c1;

        py->decref(t);
        if (!str)
                return false;
        n = py->str_len(key);
        c0 = n > 0 ? py->str_char(key, 0) : 0;
        c1 = n > 1 ? py->str_char(key, 1) : 0;
        py->err_clear();
        if (first)
                return c0 == '_' && c1 != '_';
        return c0 != '_' || py->str_is(key, "__builtins__") != 0;
}

/* _PyModule_ClearDict, as CPython 3.7-3.13 wipes a module's globals at its
 * exit (finalize_modules_clear_weaklist, and sys's and builtins' dicts
 * last): the live dict @d walked twice, each str key whose value is not
 * None set to None, names with one leading underscore first; no key's
 * __hash__ or __eq__ called but by the setting itself, as there. @was: for
 * a zygote module's dict, its copy made in the zygote, and only an entry
 * whose value is not the copy's (the job's, set before or while the
 * modules are wiped) is set; a key not exactly a str counts as the job's
 * unread. None: every entry. Errors reported as unraisable. */
void finalize_clear_dict(const struct pyapi *py, pyobj *d, pyobj *was)
{
        for (int pass = 0; pass < 2; pass++) {
                ssize_t pos = 0;
                pyobj *k, *v;

                while (py->dict_next(d, &pos, &k, &v))
                        if (v != py->none && cleared_in_pass(py, k, pass == 0) &&
                            (was == py->none || !is_str_exact(py, k) || py->dict_get(was, k) != v) &&
                            py->dict_set(d, k, py->none) < 0)
                                py->unraisable(NULL);
        }
}

static bool one_of(const struct pyapi *py, pyobj *tuple, pyobj *obj)
{
        for (ssize_t i = 0; i < py->tuple_size(tuple); i++)
                if (py->tuple_item(tuple, i) == obj)
                        return true;
        return false;
}

/* One job's module of finalize_modules_clear_weaklist: @ref a weak
 * reference to it; its own dict (md_dict, as PyModule_GetDict reads it: no
 * __dict__ or __getattribute__ of the job's called) wiped, the module held
 * meanwhile, unless the dict is one of the tuple @skip (sys's, builtins')
 * or the module is gone. */
static void clear_job_module(const struct pyapi *py, pyobj *ref, pyobj *skip)
{
        pyobj *mod = py->weakref_get(ref), *d;

        if (!mod || mod == py->none || !pyapi_is_a(py, mod, py->module_type)) {
                py->err_clear();
                return;
        }
        py->incref(mod);
        d = py->module_dict(mod);
        if (d && !one_of(py, skip, d))
                finalize_clear_dict(py, d, py->none);
        py->err_clear();
        py->decref(mod);
}

/* Whether the zygote's module dict @i of the tuple @dicts may hold
 * something of the job's now: its version tag is no longer the one it had
 * when the zygote began to serve (no entry read), or, untagged, its
 * entries are not its copy's (@copies' @i) side by side. */
static bool zygote_dict_touched(const struct pyapi *py, pyobj *dicts, pyobj *copies, ssize_t i)
{
        pyobj *d = py->tuple_item(dicts, i);

        if (py->dict_tag && dicts == py->tagged)
                return dict_tag(py, d) != py->tags[i];
        return !same_entries(py, d, py->tuple_item(copies, i));
}

/* finalize_modules_clear_weaklist: the modules of @alive (remove_modules'
 * list) still alive, the last first, wiped. Of a zygote's module (an index
 * into the tuples @dicts and @copies) only what is the job's at its turn:
 * what the job set, and what a finaliser run by an earlier wiping set
 * (cold, that goes too); a dict left alone is not read. Not sys's or
 * builtins' (@skip). Each entry held meanwhile, the list's size read
 * afresh: nothing here trusts a list a finaliser could reach. */
void finalize_clear_weaklist(const struct pyapi *py, pyobj *alive, pyobj *dicts, pyobj *copies, pyobj *skip)
{
        for (ssize_t i = py->list_size(alive) - 1; i >= 0; i--) {
                pyobj *kept = i < py->list_size(alive) ? py->list_item(alive, i) : NULL, *t;

                if (!kept)
                        continue;
                py->incref(kept);
                t = py->type(kept);
                if (!py->is_subtype(t, py->long_type)) {
                        clear_job_module(py, kept, skip);
                } else {
                        long at = py->as_long(kept);
                        bool in = at >= 0 && at < py->tuple_size(dicts) && at < py->tuple_size(copies);
                        pyobj *d = in ? py->tuple_item(dicts, at) : NULL;

                        if (d && !one_of(py, skip, d) && zygote_dict_touched(py, dicts, copies, at))
                                finalize_clear_dict(py, d, py->tuple_item(copies, at));
                }
                py->decref(t);
                py->err_clear();
                py->decref(kept);
        }
        py->err_clear();
}

/* Where a dict keeps its version tag (PEP 509's ma_version_tag: CPython
 * 3.6-3.13 give a dict a new, larger one from a global counter at every
 * change of its contents), or 0. Not in the stable ABI, so taken only
 * where it behaves so here, in the zygote: after the object's head and
 * ma_used (which must read as the dict's size), a value that grows at a
 * new key, at a new value for a key and at a deletion, and stays at a
 * read, across two dicts. 0 (a CPython without it, or laid out
 * otherwise): every dict is compared entry by entry. */
static size_t find_dict_tag(const struct pyapi *py)
{
        const size_t used_at = 2 * sizeof(void *), tag_at = used_at + sizeof(ssize_t);
        pyobj *d = py->dict_new(), *e = py->dict_new();
        uint64_t t[6] = { 0 };
        ssize_t used = -1;
        bool ok = false;

        if (d && e) {
                t[0] = word_at(d, tag_at);
                ok = py->dict_set_str(d, "a", py->none) == 0;
                t[1] = word_at(d, tag_at);
                ok = ok && py->dict_set_str(d, "a", py->yes) == 0;
                t[2] = word_at(d, tag_at);
                ok = ok && py->dict_get(d, py->none) == NULL;
                t[3] = word_at(d, tag_at);
                memcpy(&used, (const char *) d + used_at, sizeof used);   /* ma_used */
                ok = ok && used == 1 && py->dict_del_str(d, "a") == 0;
                t[4] = word_at(d, tag_at);
                ok = ok && py->dict_set_str(e, "b", py->none) == 0;
                t[5] = word_at(e, tag_at);
                ok = ok && t[0] < t[1] && t[1] < t[2] && t[2] == t[3] && t[3] < t[4] && t[4] < t[5];
        }
        py->err_clear();
        if (d)
                py->decref(d);
        if (e)
                py->decref(e);
        return ok ? tag_at : 0;
}

/* The zygote's module dicts @dicts (a tuple of dicts; NULL: none) and
 * each one's tag now, for the jobs' finalisation (zygote_dict_touched);
 * held for good. Anything else: no tags. */
static void remember_tags(struct pyapi *py, pyobj *dicts)
{
        ssize_t n = dicts && py->dict_tag ? py->tuple_size(dicts) : -1;

        for (ssize_t i = 0; i < n; i++)
                if (!pyapi_is_a(py, py->tuple_item(dicts, i), py->dict_type))
                        n = -1;
        if (n < 0 || !(py->tags = calloc((size_t) n + 1, sizeof *py->tags))) {
                py->err_clear();
                py->dict_tag = 0;
                return;
        }
        for (ssize_t i = 0; i < n; i++)
                py->tags[i] = dict_tag(py, py->tuple_item(dicts, i));
        py->incref(dicts);
        py->tagged = dicts;
}

void finalize_note_tags(struct pyapi *py, pyobj *zygote_dicts)
{
        py->dict_tag = find_dict_tag(py);
        remember_tags(py, zygote_dicts);
}
