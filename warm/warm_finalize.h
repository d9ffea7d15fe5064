/* warm/warm_finalize.h — what Py_FinalizeEx does to sys.modules and to the
 * modules' globals, for a warm job (warm_finalize.c): the C steps of
 * zygote.py's _finalize_modules (warm_job.h's WARM_STEP_CHANGED,
 * _REMOVE_MODULES, _CLEAR, _CLEAR_WEAKLIST). Each walks live dicts as
 * CPython's own finalisation does, calls no method of the job's objects
 * but what the setting of a value calls there, and writes to no page of
 * a zygote's module the job left alone (docs/warm-start.md).
 */
#ifndef NSBOX_WARM_FINALIZE_H
#define NSBOX_WARM_FINALIZE_H

#include "warm/warm_pyapi.h"

/* For each pair of the tuples @ds and @wases, the keys of the dict whose
 * value is not the copy's; a list of lists, or NULL with the error set. */
pyobj *finalize_changed_keys_each(const struct pyapi *py, pyobj *ds, pyobj *wases);

/* finalize_remove_modules over @modules; @zygote maps a zygote module's
 * address to its index. The list of what is kept of each module (an index,
 * or a weak reference), or NULL with the error set. */
pyobj *finalize_remove_modules(const struct pyapi *py, pyobj *modules, pyobj *zygote);

/* _PyModule_ClearDict of @d; @was its copy (a zygote module's) or None. */
void finalize_clear_dict(const struct pyapi *py, pyobj *d, pyobj *was);

/* finalize_modules_clear_weaklist over @alive (finalize_remove_modules'
 * list), the zygote's module dicts @dicts and their @copies, never the
 * dicts in the tuple @skip. */
void finalize_clear_weaklist(const struct pyapi *py, pyobj *alive, pyobj *dicts, pyobj *copies, pyobj *skip);

/* In the zygote, before any job: where this CPython keeps a dict's version
 * tag, if anywhere, and each of @zygote_dicts' tags now (NULL: none). */
void finalize_note_tags(struct pyapi *py, pyobj *zygote_dicts);

#endif
