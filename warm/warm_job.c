/* warm/warm_job.c — a warm job's Python, run from C (warm_job.h).
 *
 * No Python headers: every function is looked up in the interpreter that
 * loaded this library (the python3 binary exports them; ctypes.pythonapi
 * relies on it), and each is in CPython's stable ABI since 3.7, so one
 * build serves every CPython the zygote may be. Objects are opaque here;
 * references are counted with Py_IncRef/Py_DecRef, the functions.
 */
#include "warm/warm_job.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

typedef struct py_object pyobj;   /* PyObject, never looked into */

/* Py_file_input (Include/compile.h): a module's statements */
#define PY_FILE_INPUT 257

/* Frames the harness (zygote.py's generator) may use between two steps,
 * given on top of the job's own recursion limit while it runs: a job that
 * set a limit of 5 still ends as cold. */
#define HARNESS_FRAMES 50

struct pyapi {
        void *(*tstate_get)(void);
        void *(*save_thread)(void);
        void *(*tstate_new)(void *);
        void (*tstate_clear)(void *);
        void (*tstate_delete)(void *);
        void *(*interp_head)(void);
        int (*gil_ensure)(void);
        int (*get_limit)(void);
        void (*set_limit)(int);
        pyobj *(*call_method)(pyobj *, const char *, const char *, ...);
        pyobj *(*call)(pyobj *, pyobj *, pyobj *);
        pyobj *(*run_file)(FILE *, const char *, int, pyobj *, pyobj *, int, void *);
        void (*fetch)(pyobj **, pyobj **, pyobj **);
        void (*normalize)(pyobj **, pyobj **, pyobj **);
        void (*restore)(pyobj *, pyobj *, pyobj *);
        void (*print)(void);
        void (*unraisable)(pyobj *);
        int (*set_traceback)(pyobj *, pyobj *);
        pyobj *(*get_traceback)(pyobj *);
        pyobj *(*type)(pyobj *);
        pyobj *(*tuple_pack)(ssize_t, ...);
        pyobj *(*tuple_item)(pyobj *, ssize_t);
        ssize_t (*tuple_size)(pyobj *);
        long (*as_long)(pyobj *);
        char *(*bytes_str)(pyobj *);
        int (*is_true)(pyobj *);
        int (*dict_next)(pyobj *, ssize_t *, pyobj **, pyobj **);
        pyobj *(*dict_get)(pyobj *, pyobj *);
        pyobj *(*list_new)(ssize_t);
        int (*list_append)(pyobj *, pyobj *);
        pyobj *(*list_slice)(pyobj *, ssize_t, ssize_t);
        int (*list_set_slice)(pyobj *, ssize_t, ssize_t, pyobj *);
        pyobj *(*getattr)(pyobj *, pyobj *);
        pyobj *(*getattr_str)(pyobj *, const char *);
        pyobj *(*sys_get)(const char *);
        int (*write_object)(pyobj *, pyobj *, int);
        int (*print_object)(pyobj *, FILE *, int);
        void (*write_stderr)(const char *, ...);
        void (*err_clear)(void);
        pyobj *(*from_long)(long);
        pyobj *(*from_ptr)(void *);
        pyobj *(*fs_decode)(const char *);
        int (*list_set_item)(pyobj *, ssize_t, pyobj *);
        int (*is_subtype)(pyobj *, pyobj *);
        void (*gc_untrack)(void *);
        ssize_t (*gc_collect)(void);
        /* PyThreadState_EnterTracing/LeaveTracing (3.11+): NULL before,
         * and the harness then runs traced (docs/warm-start.md) */
        void (*enter_tracing)(void *);
        void (*leave_tracing)(void *);
        pyobj *long_type, *module_type, *str_type, *dict_type;
        unsigned long (*type_flags)(pyobj *);
        ssize_t (*str_len)(pyobj *);
        uint32_t (*str_char)(pyobj *, ssize_t);
        int (*str_is)(pyobj *, const char *);
        int (*dict_set)(pyobj *, pyobj *, pyobj *);
        ssize_t (*list_size)(pyobj *);
        pyobj *(*weakref_get)(pyobj *);
        pyobj *(*module_dict)(pyobj *);
        pyobj *(*list_item)(pyobj *, ssize_t);
        pyobj *(*weakref_new)(pyobj *, pyobj *);
        int (*setitem)(pyobj *, pyobj *, pyobj *);
        void (*incref)(pyobj *);
        void (*decref)(pyobj *);
        pyobj *none, *yes, *no;
        /* where _PyRuntime keeps the thread state that finalises (its
         * "finalizing"), or NULL when not found (find_finalizing) */
        void **finalizing;
        pyobj *(*dict_new)(void);
        int (*dict_set_str)(pyobj *, const char *, pyobj *);
        int (*dict_del_str)(pyobj *, const char *);
        /* where a dict keeps its version tag, or 0 (find_dict_tag); the
         * zygote's tuple of its modules' dicts and each one's tag when it
         * began to serve (warm_job_resolve), or NULL */
        size_t dict_tag;
        pyobj *tagged;
        uint64_t *tags;
};

static int resolve(void *fn, const char *name)
{
        void *p = dlsym(RTLD_DEFAULT, name);

        memcpy(fn, &p, sizeof p);   /* a data pointer into a function pointer, as dlsym(3) shows */
        return p ? 0 : -1;
}

/* Looked up once, in the zygote (warm_job_resolve): a lookup is a search of
 * every loaded object's symbols, tens of microseconds a job otherwise. The
 * one file-scope state here: the interpreter's functions, the same in every
 * job the zygote forks. */
static struct pyapi zygote_py;

static int pyapi_resolve(struct pyapi *py)
{
        int bad = 0;

        bad |= resolve(&py->tstate_get, "PyThreadState_Get");
        bad |= resolve(&py->save_thread, "PyEval_SaveThread");
        bad |= resolve(&py->tstate_new, "PyThreadState_New");
        bad |= resolve(&py->tstate_clear, "PyThreadState_Clear");
        bad |= resolve(&py->tstate_delete, "PyThreadState_Delete");
        bad |= resolve(&py->interp_head, "PyInterpreterState_Head");
        bad |= resolve(&py->gil_ensure, "PyGILState_Ensure");
        bad |= resolve(&py->get_limit, "Py_GetRecursionLimit");
        bad |= resolve(&py->set_limit, "Py_SetRecursionLimit");
        bad |= resolve(&py->call_method, "PyObject_CallMethod");
        bad |= resolve(&py->call, "PyObject_Call");
        bad |= resolve(&py->run_file, "PyRun_FileExFlags");
        bad |= resolve(&py->fetch, "PyErr_Fetch");
        bad |= resolve(&py->normalize, "PyErr_NormalizeException");
        bad |= resolve(&py->restore, "PyErr_Restore");
        bad |= resolve(&py->print, "PyErr_Print");
        bad |= resolve(&py->unraisable, "PyErr_WriteUnraisable");
        bad |= resolve(&py->set_traceback, "PyException_SetTraceback");
        bad |= resolve(&py->get_traceback, "PyException_GetTraceback");
        bad |= resolve(&py->type, "PyObject_Type");
        bad |= resolve(&py->tuple_pack, "PyTuple_Pack");
        bad |= resolve(&py->tuple_item, "PyTuple_GetItem");
        bad |= resolve(&py->tuple_size, "PyTuple_Size");
        bad |= resolve(&py->as_long, "PyLong_AsLong");
        bad |= resolve(&py->bytes_str, "PyBytes_AsString");
        bad |= resolve(&py->is_true, "PyObject_IsTrue");
        bad |= resolve(&py->dict_next, "PyDict_Next");
        bad |= resolve(&py->dict_get, "PyDict_GetItem");
        bad |= resolve(&py->list_new, "PyList_New");
        bad |= resolve(&py->list_append, "PyList_Append");
        bad |= resolve(&py->list_slice, "PyList_GetSlice");
        bad |= resolve(&py->list_set_slice, "PyList_SetSlice");
        bad |= resolve(&py->getattr, "PyObject_GetAttr");
        bad |= resolve(&py->getattr_str, "PyObject_GetAttrString");
        bad |= resolve(&py->sys_get, "PySys_GetObject");
        bad |= resolve(&py->write_object, "PyFile_WriteObject");
        bad |= resolve(&py->print_object, "PyObject_Print");
        bad |= resolve(&py->write_stderr, "PySys_WriteStderr");
        bad |= resolve(&py->err_clear, "PyErr_Clear");
        bad |= resolve(&py->from_long, "PyLong_FromLong");
        bad |= resolve(&py->from_ptr, "PyLong_FromVoidPtr");
        bad |= resolve(&py->fs_decode, "PyUnicode_DecodeFSDefault");
        bad |= resolve(&py->list_set_item, "PyList_SetItem");
        bad |= resolve(&py->is_subtype, "PyType_IsSubtype");
        bad |= resolve(&py->gc_untrack, "PyObject_GC_UnTrack");
        bad |= resolve(&py->gc_collect, "PyGC_Collect");
        (void) resolve(&py->enter_tracing, "PyThreadState_EnterTracing");
        (void) resolve(&py->leave_tracing, "PyThreadState_LeaveTracing");
        py->long_type = dlsym(RTLD_DEFAULT, "PyLong_Type");
        py->module_type = dlsym(RTLD_DEFAULT, "PyModule_Type");
        py->dict_type = dlsym(RTLD_DEFAULT, "PyDict_Type");
        py->str_type = dlsym(RTLD_DEFAULT, "PyUnicode_Type");
        bad |= resolve(&py->type_flags, "PyType_GetFlags");
        bad |= resolve(&py->str_len, "PyUnicode_GetLength");
        bad |= resolve(&py->str_char, "PyUnicode_ReadChar");
        bad |= resolve(&py->str_is, "PyUnicode_CompareWithASCIIString");
        bad |= resolve(&py->dict_set, "PyDict_SetItem");
        bad |= resolve(&py->list_size, "PyList_Size");
        bad |= resolve(&py->weakref_get, "PyWeakref_GetObject");
        bad |= resolve(&py->module_dict, "PyModule_GetDict");
        bad |= resolve(&py->list_item, "PyList_GetItem");
        bad |= resolve(&py->weakref_new, "PyWeakref_NewRef");
        bad |= resolve(&py->setitem, "PyObject_SetItem");
        bad |= resolve(&py->dict_new, "PyDict_New");
        bad |= resolve(&py->dict_set_str, "PyDict_SetItemString");
        bad |= resolve(&py->dict_del_str, "PyDict_DelItemString");
        bad |= resolve(&py->incref, "Py_IncRef");
        bad |= resolve(&py->decref, "Py_DecRef");
        py->none = dlsym(RTLD_DEFAULT, "_Py_NoneStruct");
        py->yes = dlsym(RTLD_DEFAULT, "_Py_TrueStruct");
        py->no = dlsym(RTLD_DEFAULT, "_Py_FalseStruct");
        return bad || !py->none || !py->yes || !py->no || !py->long_type || !py->module_type ||
                       !py->str_type || !py->dict_type ? -1 : 0;
}

/* The zygote's frames (zygote.py's module, the ctypes call that brought us
 * here) live on its thread state; the job runs on a new one, as a cold
 * script runs on a thread state with no frame but its own. The new one must
 * be this thread's "GIL state" too (PyGILState_Ensure, which ctypes
 * callbacks and extension modules call, would otherwise find the old state,
 * not current, and wait for the GIL this thread holds); CPython binds a
 * thread state to its thread only when it makes one for a thread that has
 * none, so: the old one deleted, PyGILState_Ensure makes and binds the new
 * one. A spare state stays in the interpreter's list meanwhile (3.11 reuses
 * the statically allocated first state for a list gone empty, and will not
 * initialise it twice). The old frames are never resumed: this call does
 * not return. */
static void fresh_thread_state(const struct pyapi *py)
{
        void *old = py->tstate_get(), *spare;

        py->tstate_clear(old);
        (void) py->save_thread();
        spare = py->tstate_new(py->interp_head());
        py->tstate_delete(old);
        (void) py->gil_ensure();
        py->tstate_clear(spare);
        py->tstate_delete(spare);
}

/* The exception raised, normalised, with its traceback attached: what the
 * harness is sent, and what PRINT and UNRAISABLE raise again. */
static pyobj *take_exception(const struct pyapi *py)
{
        pyobj *t = NULL, *v = NULL, *tb = NULL;

        py->fetch(&t, &v, &tb);
        py->normalize(&t, &v, &tb);
        if (v && tb)
                (void) py->set_traceback(v, tb);
        if (t)
                py->decref(t);
        if (tb)
                py->decref(tb);
        if (!v) {
                py->incref(py->none);
                v = py->none;
        }
        return v;
}

static void raise_again(const struct pyapi *py, pyobj *exc)
{
        py->incref(exc);
        py->restore(py->type(exc), exc, py->get_traceback(exc));
}

/* (True, @result) or (False, the exception): what a step sends back. */
static pyobj *outcome(const struct pyapi *py, pyobj *result)
{
        pyobj *ok = result ? py->yes : py->no, *sent;

        if (!result)
                result = take_exception(py);
        sent = py->tuple_pack(2, ok, result);
        py->decref(result);
        return sent;
}

/* The process's end, as Py_RunMain's: C's stdio buffers flushed (what a
 * library printed with printf), as exit() does, but not the destructors of
 * every library the zygote loaded; or the default SIGINT for an unhandled
 * KeyboardInterrupt. */
static void job_exit(int status, int sigint)
{
        (void) fflush(NULL);
        if (sigint) {
                signal(SIGINT, SIG_DFL);
                kill(getpid(), SIGINT);
                status = 128 + SIGINT;
        }
        _exit(status);
}

/* The script: as _PyRun_SimpleFileObject opens and runs it (the parser
 * reading the file, its coding cookie and its errors as cold). */
static pyobj *run_script(const struct pyapi *py, pyobj *path, pyobj *globals)
{
        const char *name = py->bytes_str(path);
        FILE *f = name ? fopen(name, "rb") : NULL;

        if (!f) {
                fprintf(stderr, "python3: can't open file '%s': [Errno %d] %s\n", name ? name : "?", errno,
                        strerror(errno));
                job_exit(2, 0);
        }
        return py->run_file(f, name, PY_FILE_INPUT, globals, globals, 1, NULL);
}

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

/* The keys of dict @d whose value is not the very object dict @was has for
 * them, in @d's order. Read with borrowed references: no object's count is
 * written, so a dict of the zygote's is compared without copying a page of
 * what it holds; and one the job left alone (nearly all: a zygote with
 * numpy has ~270 modules, ~20000 names) costs no lookup. */
static bool is_str_exact(const struct pyapi *py, pyobj *obj)
{
        pyobj *t = py->type(obj);

        py->decref(t);  /* the type outlives obj, which holds it */
        return t == py->str_type;
}

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

static uint64_t dict_tag(const struct pyapi *py, pyobj *d)
{
        uint64_t tag;

        memcpy(&tag, (const char *) d + py->dict_tag, sizeof tag);
        return tag;
}

/* changed_keys of each pair of the tuples @ds and @wases. */
static pyobj *changed_keys_each(const struct pyapi *py, pyobj *ds, pyobj *wases)
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

static int is_a(const struct pyapi *py, pyobj *obj, pyobj *type)
{
        pyobj *t = py->type(obj);
        int yes = py->is_subtype(t, type);

        py->decref(t);
        return yes;
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
static pyobj *remove_modules(const struct pyapi *py, pyobj *modules, pyobj *zygote)
{
        pyobj *alive = py->list_new(0), *name, *mod;
        ssize_t pos = 0;

        while (alive && py->dict_next(modules, &pos, &name, &mod)) {
                pyobj *addr, *kept;

                if (!is_a(py, mod, py->module_type))
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
static void clear_dict(const struct pyapi *py, pyobj *d, pyobj *was)
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

        if (!mod || mod == py->none || !is_a(py, mod, py->module_type)) {
                py->err_clear();
                return;
        }
        py->incref(mod);
        d = py->module_dict(mod);
        if (d && !one_of(py, skip, d))
                clear_dict(py, d, py->none);
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
static void clear_weaklist(const struct pyapi *py, pyobj *alive, pyobj *dicts, pyobj *copies, pyobj *skip)
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
                                clear_dict(py, d, py->tuple_item(copies, at));
                }
                py->decref(t);
                py->err_clear();
                py->decref(kept);
        }
        py->err_clear();
}

/* obj.name(*args), as C's PyObject_CallMethod: the attribute is looked up
 * here, so a missing one is reported as cold reports it, with no frame of
 * the harness in its traceback. @args None: the attribute itself. */
static pyobj *method(const struct pyapi *py, pyobj *obj, pyobj *name, pyobj *args)
{
        pyobj *f = py->getattr(obj, name), *r;

        if (!f || args == py->none)
                return f;
        r = py->call(f, args, NULL);
        py->decref(f);
        return r;
}

/* The status of an unhandled SystemExit @exc, as 3.11's
 * _Py_HandleSystemExit finds and says it: its code (or, when reading it
 * fails, the exception itself); None 0, an int C's (int) of its long, any
 * other printed raw on sys.stderr (or C's stderr) with a newline, 1. Every
 * error on the way is dropped, as there. */
static long exit_status(const struct pyapi *py, pyobj *exc)
{
        pyobj *v = py->getattr_str(exc, "code"), *t, *err;
        long status = 1;

        (void) fflush(stdout);
        if (!v) {
                py->incref(exc);
                v = exc;
        }
        t = py->type(v);
        if (v == py->none) {
                status = 0;
        } else if (py->is_subtype(t, py->long_type)) {
                status = (int) py->as_long(v);
        } else {
                err = py->sys_get("stderr");
                py->err_clear();
                if (err && err != py->none) {
                        (void) py->write_object(v, err, 1);     /* Py_PRINT_RAW */
                } else {
                        (void) py->print_object(v, stderr, 1);
                        (void) fflush(stderr);
                }
                py->write_stderr("\n");
        }
        py->err_clear();
        py->decref(t);
        py->decref(v);
        return status;
}

/* A collection of Py_FinalizeEx's. The first (@first true) is
 * PyGC_Collect's: none when the job disabled the collector, gc.callbacks
 * called. The others are _PyGC_CollectNoFail's, which CPython does not
 * export: always, and no callback; so @collect (gc.collect, held since the
 * zygote) runs with @callbacks (the collector's own list, held likewise)
 * emptied meanwhile, then given back its entries. */
static pyobj *collect(const struct pyapi *py, pyobj *collect_fn, pyobj *callbacks, int first)
{
        pyobj *saved, *none = py->tuple_pack(0), *r;

        if (first || !none) {
                if (none)
                        py->decref(none);
                return py->from_long((long) py->gc_collect());
        }
        saved = py->list_slice(callbacks, 0, SSIZE_MAX);
        if (saved)
                (void) py->list_set_slice(callbacks, 0, SSIZE_MAX, NULL);
        r = py->call(collect_fn, none, NULL);
        if (saved) {
                (void) py->list_set_slice(callbacks, 0, 0, saved);
                py->decref(saved);
        }
        py->decref(none);
        return r;
}

/* One step; returns what the generator is sent next. */
static pyobj *step(const struct pyapi *py, pyobj *s)
{
        ssize_t n = py->tuple_size(s);
        long kind = py->as_long(py->tuple_item(s, 0));
        pyobj *a = n > 1 ? py->tuple_item(s, 1) : NULL, *b = n > 2 ? py->tuple_item(s, 2) : NULL;
        pyobj *c = n > 3 ? py->tuple_item(s, 3) : NULL, *e = n > 4 ? py->tuple_item(s, 4) : NULL;

        switch (kind) {
        case WARM_STEP_CALL:
                return outcome(py, py->call(a, b, NULL));
        case WARM_STEP_RUN:
                return outcome(py, run_script(py, a, b));
        case WARM_STEP_CHANGED:
                return outcome(py, changed_keys_each(py, a, b));
        case WARM_STEP_METHOD:
                return outcome(py, method(py, a, b, c));
        case WARM_STEP_EXIT_STATUS:
                return py->from_long(exit_status(py, a));
        case WARM_STEP_REMOVE_MODULES:
                return outcome(py, remove_modules(py, a, b));
        case WARM_STEP_COLLECT:
                return outcome(py, collect(py, a, b, py->is_true(c)));
        case WARM_STEP_CLEAR:
                clear_dict(py, a, py->none);
                break;
        case WARM_STEP_CLEAR_WEAKLIST:
                clear_weaklist(py, a, b, c, e);
                break;
        case WARM_STEP_HIDE:
                /* kept for good: an object untracked must never be freed */
                py->incref(a);
                py->gc_untrack(a);
                break;
        case WARM_STEP_PRINT:
                raise_again(py, a);
                py->print();
                break;
        case WARM_STEP_UNRAISABLE:
                raise_again(py, a);
                py->unraisable(b);
                break;
        case WARM_STEP_FINALIZING:
                if (py->finalizing)
                        __atomic_store_n(py->finalizing, py->tstate_get(), __ATOMIC_SEQ_CST);
                break;
        case WARM_STEP_EXIT:
                job_exit((int) py->as_long(a), py->is_true(b));
                break;
        default:
                fprintf(stderr, "nsbox warm: the job's harness asked for step %ld\n", kind);
                job_exit(1, 0);
        }
        py->incref(py->none);
        return py->none;
}

/* _PyRuntime's "finalizing" field: what Py_FinalizeEx sets after the
 * atexit handlers, and what makes every other thread that then waits for
 * the GIL end (daemon threads stop, as at a cold exit) and
 * sys.is_finalizing() true. Its place differs between CPython versions and
 * no API sets it: it is found in the zygote, single-threaded, as the first
 * pointer-sized zero slot of _PyRuntime that, set, makes CPython's own
 * _Py_IsFinalizing()/Py_IsFinalizing() true (each slot tried is put back
 * at once). Not found: NULL, and a job's daemon threads run on while it
 * finalises (docs/warm-start.md). */
static void **find_finalizing(void *tstate)
{
        char *rt = dlsym(RTLD_DEFAULT, "_PyRuntime");
        int (*is_finalizing)(void);

        if (!resolve(&is_finalizing, "Py_IsFinalizing") || !resolve(&is_finalizing, "_Py_IsFinalizing"))
                for (size_t off = 0; rt && tstate && !is_finalizing() && off < 4096; off += sizeof(void *)) {
                        void **slot = (void **) (rt + off);
                        int yes;

                        if (*slot)
                                continue;
                        *slot = tstate;
                        yes = is_finalizing();
                        *slot = NULL;
                        if (yes)
                                return slot;
                }
        return NULL;
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
                memcpy(&t[0], (char *) d + tag_at, sizeof t[0]);
                ok = py->dict_set_str(d, "a", py->none) == 0;
                memcpy(&t[1], (char *) d + tag_at, sizeof t[1]);
                ok = ok && py->dict_set_str(d, "a", py->yes) == 0;
                memcpy(&t[2], (char *) d + tag_at, sizeof t[2]);
                ok = ok && py->dict_get(d, py->none) == NULL;
                memcpy(&t[3], (char *) d + tag_at, sizeof t[3]);
                memcpy(&used, (char *) d + used_at, sizeof used);
                ok = ok && used == 1 && py->dict_del_str(d, "a") == 0;
                memcpy(&t[4], (char *) d + tag_at, sizeof t[4]);
                ok = ok && py->dict_set_str(e, "b", py->none) == 0;
                memcpy(&t[5], (char *) e + tag_at, sizeof t[5]);
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
 * each one's tag now, for the jobs' finalisation (changed_keys_each); held
 * for good. Anything else: no tags. */
static void remember_tags(struct pyapi *py, pyobj *dicts)
{
        ssize_t n = dicts && py->dict_tag ? py->tuple_size(dicts) : -1;

        for (ssize_t i = 0; i < n; i++)
                if (!is_a(py, py->tuple_item(dicts, i), py->dict_type))
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

int warm_job_resolve(void *zygote_dicts)
{
        if (pyapi_resolve(&zygote_py) < 0)
                return -1;
        zygote_py.finalizing = find_finalizing(zygote_py.tstate_get());
        zygote_py.dict_tag = find_dict_tag(&zygote_py);
        remember_tags(&zygote_py, zygote_dicts);
        return 0;
}

/* sys.@name.flush(), its error dropped */
static void flush_std(const struct pyapi *py, const char *name)
{
        pyobj *f = py->sys_get(name), *r = f && f != py->none ? py->call_method(f, "flush", NULL) : NULL;

        if (r)
                py->decref(r);
        py->err_clear();
}

void nsbox_warm_run(void *generator)
{
        struct pyapi py = zygote_py;
        pyobj *gen = generator, *sent;

        if (!py.none) {
                fprintf(stderr, "nsbox warm: the job's C API was not looked up in the zygote\n");
                _exit(1);
        }
        py.incref(gen);
        fresh_thread_state(&py);
        py.gc_untrack(gen);     /* not among gc.get_objects(); held for good above */
        py.incref(py.none);
        sent = py.none;
        for (;;) {
                /* the job's limit is back in place for each step */
                int limit = py.get_limit();
                void *tstate = py.tstate_get();
                pyobj *s;

                /* the harness's own code is never traced nor profiled: a
                 * tracer or profiler the job left sees what it sees cold
                 * (the steps, run from here, are traced as cold) */
                if (py.enter_tracing && py.leave_tracing)
                        py.enter_tracing(tstate);
                py.set_limit(limit < INT_MAX - HARNESS_FRAMES ? limit + HARNESS_FRAMES : limit);
                s = py.call_method(gen, "send", "(O)", sent);
                py.set_limit(limit);
                if (py.enter_tracing && py.leave_tracing)
                        py.leave_tracing(tstate);
                py.decref(sent);
                if (!s) {
                        /* the harness itself failed: said, never a silent
                         * success, and what the job printed is not lost */
                        flush_std(&py, "stdout");
                        py.print();
                        flush_std(&py, "stderr");
                        job_exit(1, 0);
                }
                sent = step(&py, s);
                py.decref(s);
        }
}

/* The job's argv as a list of str, decoded as CPython decodes its own
 * arguments (the file system encoding, surrogateescape); NULL with the
 * error set. */
static pyobj *argv_list(const struct pyapi *py, char *const *argv, int argc)
{
        pyobj *list = py->list_new(argc);

        for (int i = 0; list && i < argc; i++) {
                pyobj *s = py->fs_decode(argv[i]);

                if (!s || py->list_set_item(list, i, s) < 0) {   /* steals s */
                        py->decref(list);
                        list = NULL;
                }
        }
        return list;
}

void warm_job_start(void *start, char *const *argv, int argc)
{
        struct pyapi py = zygote_py;
        pyobj *args, *list, *gen = NULL;

        if (!py.none) {
                fprintf(stderr, "nsbox warm: the job's C API was not looked up in the zygote\n");
                _exit(1);
        }
        list = argv_list(&py, argv, argc);
        args = list ? py.tuple_pack(1, list) : NULL;
        if (args)
                gen = py.call(start, args, NULL);
        if (list)
                py.decref(list);
        if (args)
                py.decref(args);
        if (!gen) {
                /* the harness itself failed: said, never a silent success */
                py.print();
                job_exit(1, 0);
        }
        nsbox_warm_run(gen);
}
