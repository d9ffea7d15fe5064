/* warm/warm_job.c — a warm job's Python, run from C (warm_job.h): the
 * job's thread state, the steps of its run and exit, the process's end.
 * The interpreter's API is warm_pyapi.h's (no Python headers); the steps
 * that finalise modules are warm_finalize.c's.
 */
#include "warm/warm_job.h"
#include "warm/warm_finalize.h"
#include "warm/warm_pyapi.h"

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

/* Py_file_input (Include/compile.h): a module's statements */
#define PY_FILE_INPUT 257

/* Frames the harness (zygote.py's generator) may use between two steps,
 * given on top of the job's own recursion limit while it runs: a job that
 * set a limit of 5 still ends as cold. */
#define HARNESS_FRAMES 50

/* Looked up once, in the zygote (warm_job_resolve): a lookup is a search of
 * every loaded object's symbols, tens of microseconds a job otherwise. The
 * one file-scope state here: the interpreter's functions, the same in every
 * job the zygote forks. */
static struct pyapi zygote_py;

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
                return outcome(py, finalize_changed_keys_each(py, a, b));
        case WARM_STEP_METHOD:
                return outcome(py, method(py, a, b, c));
        case WARM_STEP_EXIT_STATUS:
                return py->from_long(exit_status(py, a));
        case WARM_STEP_REMOVE_MODULES:
                return outcome(py, finalize_remove_modules(py, a, b));
        case WARM_STEP_COLLECT:
                return outcome(py, collect(py, a, b, py->is_true(c)));
        case WARM_STEP_CLEAR:
                finalize_clear_dict(py, a, py->none);
                break;
        case WARM_STEP_CLEAR_WEAKLIST:
                finalize_clear_weaklist(py, a, b, c, e);
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

        if (!pyapi_lookup(&is_finalizing, "Py_IsFinalizing") || !pyapi_lookup(&is_finalizing, "_Py_IsFinalizing"))
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

int warm_job_resolve(void *zygote_dicts)
{
        if (pyapi_resolve(&zygote_py) < 0)
                return -1;
        zygote_py.finalizing = find_finalizing(zygote_py.tstate_get());
        finalize_note_tags(&zygote_py, zygote_dicts);
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
