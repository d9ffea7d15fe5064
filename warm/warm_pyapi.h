/* warm/warm_pyapi.h — the CPython C API a warm job calls (warm_pyapi.c).
 *
 * No Python headers: every function is looked up in the interpreter that
 * loaded libnsbox_warm.so (the python3 binary exports them; ctypes.pythonapi
 * relies on it), and each is in CPython's stable ABI since 3.7, so one
 * build serves every CPython the zygote may be. Objects are opaque here;
 * references are counted with Py_IncRef/Py_DecRef, the functions. Two
 * places are not the stable ABI's, each found and checked in the zygote
 * before it is used (warm_job.c's find_finalizing, warm_finalize.c's
 * find_dict_tag); where a check fails, nothing relies on it.
 */
#ifndef NSBOX_WARM_PYAPI_H
#define NSBOX_WARM_PYAPI_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

typedef struct py_object pyobj;   /* PyObject, never looked into */

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

/* The function @name of the running interpreter into the function pointer
 * @fn (NULL when it has none); -1 when it has none. */
int pyapi_lookup(void *fn, const char *name);

/* Looks up every function and object @py holds in the running interpreter
 * (once, in the zygote: a lookup searches every loaded object's symbols);
 * -1 when one is missing. Leaves the found places (finalizing, dict_tag,
 * tagged, tags) to their finders. */
int pyapi_resolve(struct pyapi *py);

/* Whether @obj is an instance of @type or of a subclass of it, as
 * PyObject_TypeCheck says: no method of @obj is called. */
int pyapi_is_a(const struct pyapi *py, pyobj *obj, pyobj *type);

#endif
