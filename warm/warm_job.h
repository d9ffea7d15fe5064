/* warm/warm_job.h — a warm job's Python, run from C (warm/warm_job.c).
 *
 * In a job, zygote.py hands nsbox_warm_run() a generator that says, step by
 * step, what `python3 FILE` does from running FILE to the process's exit
 * (docs/warm-start.md, "A job's run and exit"). This C part takes each step
 * and runs it with no Python frame under it: the zygote's frames are gone
 * (its thread state is deleted, the job runs on a fresh one), and the
 * generator is suspended while its step runs. So the job's own code, and
 * what a cold interpreter calls from C (sys.excepthook, atexit handlers,
 * threading's shutdown, finalisers), sees the stack and recursion depth of
 * a cold job.
 */
#ifndef NSBOX_WARM_JOB_H
#define NSBOX_WARM_JOB_H

/* The steps, as zygote.py yields them: (STEP, ...). Keep in step with its
 * _CALL, _RUN, _PRINT, _UNRAISABLE, _EXIT, _CHANGED, _FINALIZING,
 * _METHOD, _EXIT_STATUS, _REMOVE_MODULES, _COLLECT, _HIDE, _CLEAR, _CLEAR_WEAKLIST. */
enum warm_job_step {
        WARM_STEP_CALL,         /* (0, f, args): f(*args); sends (True, result) or (False, exception) */
        WARM_STEP_RUN,          /* (1, path bytes, globals): the file run as CPython runs its script */
        WARM_STEP_PRINT,        /* (2, exception): PyErr_Print, as for an unhandled exception */
        WARM_STEP_UNRAISABLE,   /* (3, exception, obj): PyErr_WriteUnraisable(obj) */
        WARM_STEP_EXIT,         /* (4, status, sigint): exit(status), or die of SIGINT first */
        WARM_STEP_CHANGED,      /* (5, (d, ...), (was, ...)): for each pair, the keys whose value in dict d is not was's */
        WARM_STEP_FINALIZING,   /* (6,): the interpreter finalises from here on, as Py_FinalizeEx says it */
        WARM_STEP_METHOD,       /* (7, obj, name, args): obj.name(*args), or obj.name for args None; as CALL sends */
        WARM_STEP_EXIT_STATUS,  /* (8, exception): the status of an unhandled SystemExit, printed as CPython prints it */
        WARM_STEP_REMOVE_MODULES, /* (9, sys.modules, {address: index}): every module's entry set to None, in
                                   * order; sends (True, [index or weak reference, ...]) as CALL sends */
        WARM_STEP_COLLECT,      /* (10, gc.collect, gc.callbacks, first): a collection as Py_FinalizeEx's; as CALL sends */
        WARM_STEP_HIDE,         /* (11, obj): untracked by the collector (not in gc.get_objects()), held for good */
        WARM_STEP_CLEAR,        /* (12, dict): its names set to None as _PyModule_ClearDict sets them */
        WARM_STEP_CLEAR_WEAKLIST, /* (13, [index or weak reference, ...], zygote's dicts, their copies, (dict, ...)):
                                   * finalize_modules_clear_weaklist, the last first (of a zygote's module,
                                   * what is the job's at its turn; no dict of the tuple) */
};

/* In the zygote, before any job: looks up the interpreter's C API a job
 * needs, and notes the version tag of each of @zygote_dicts (the tuple of
 * the zygote's module dicts a job's finalisation compares with their
 * copies, or NULL); -1 when this interpreter does not export the API. */
int warm_job_resolve(void *zygote_dicts);

/* Runs the job's generator (in a job, once, the GIL held); never returns:
 * the job's process exits from here. */
__attribute__((noreturn)) void nsbox_warm_run(void *generator);

/* In a job, right after PyOS_AfterFork_Child (warm_lib.c): calls zygote.py's
 * @start(argv) — the job's argv from its program's path on, as a list of
 * str — which makes the interpreter look just started on the job's file
 * and returns the job's generator, then nsbox_warm_run(it). No ctypes call
 * is made in a job: every call into C went through the zygote's ctypes
 * objects, whose pages each job then copied (#28). Never returns. */
__attribute__((noreturn)) void warm_job_start(void *start, char *const *argv, int argc);

#endif
