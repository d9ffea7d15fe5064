/* warm/warm_pyapi.c — the CPython C API a warm job calls, looked up
 * (warm_pyapi.h). */
#include "warm/warm_pyapi.h"

#include <dlfcn.h>
#include <string.h>

int pyapi_lookup(void *fn, const char *name)
{
        void *p = dlsym(RTLD_DEFAULT, name);

        memcpy(fn, &p, sizeof p);   /* a data pointer into a function pointer, as dlsym(3) shows */
        return p ? 0 : -1;
}

int pyapi_resolve(struct pyapi *py)
{
        int bad = 0;

        bad |= pyapi_lookup(&py->tstate_get, "PyThreadState_Get");
        bad |= pyapi_lookup(&py->save_thread, "PyEval_SaveThread");
        bad |= pyapi_lookup(&py->tstate_new, "PyThreadState_New");
        bad |= pyapi_lookup(&py->tstate_clear, "PyThreadState_Clear");
        bad |= pyapi_lookup(&py->tstate_delete, "PyThreadState_Delete");
        bad |= pyapi_lookup(&py->interp_head, "PyInterpreterState_Head");
        bad |= pyapi_lookup(&py->gil_ensure, "PyGILState_Ensure");
        bad |= pyapi_lookup(&py->get_limit, "Py_GetRecursionLimit");
        bad |= pyapi_lookup(&py->set_limit, "Py_SetRecursionLimit");
        bad |= pyapi_lookup(&py->call_method, "PyObject_CallMethod");
        bad |= pyapi_lookup(&py->call, "PyObject_Call");
        bad |= pyapi_lookup(&py->run_file, "PyRun_FileExFlags");
        bad |= pyapi_lookup(&py->fetch, "PyErr_Fetch");
        bad |= pyapi_lookup(&py->normalize, "PyErr_NormalizeException");
        bad |= pyapi_lookup(&py->restore, "PyErr_Restore");
        bad |= pyapi_lookup(&py->print, "PyErr_Print");
        bad |= pyapi_lookup(&py->unraisable, "PyErr_WriteUnraisable");
        bad |= pyapi_lookup(&py->set_traceback, "PyException_SetTraceback");
        bad |= pyapi_lookup(&py->get_traceback, "PyException_GetTraceback");
        bad |= pyapi_lookup(&py->type, "PyObject_Type");
        bad |= pyapi_lookup(&py->tuple_pack, "PyTuple_Pack");
        bad |= pyapi_lookup(&py->tuple_item, "PyTuple_GetItem");
        bad |= pyapi_lookup(&py->tuple_size, "PyTuple_Size");
        bad |= pyapi_lookup(&py->as_long, "PyLong_AsLong");
        bad |= pyapi_lookup(&py->bytes_str, "PyBytes_AsString");
        bad |= pyapi_lookup(&py->is_true, "PyObject_IsTrue");
        bad |= pyapi_lookup(&py->dict_next, "PyDict_Next");
        bad |= pyapi_lookup(&py->dict_get, "PyDict_GetItem");
        bad |= pyapi_lookup(&py->list_new, "PyList_New");
        bad |= pyapi_lookup(&py->list_append, "PyList_Append");
        bad |= pyapi_lookup(&py->list_slice, "PyList_GetSlice");
        bad |= pyapi_lookup(&py->list_set_slice, "PyList_SetSlice");
        bad |= pyapi_lookup(&py->getattr, "PyObject_GetAttr");
        bad |= pyapi_lookup(&py->getattr_str, "PyObject_GetAttrString");
        bad |= pyapi_lookup(&py->sys_get, "PySys_GetObject");
        bad |= pyapi_lookup(&py->write_object, "PyFile_WriteObject");
        bad |= pyapi_lookup(&py->print_object, "PyObject_Print");
        bad |= pyapi_lookup(&py->write_stderr, "PySys_WriteStderr");
        bad |= pyapi_lookup(&py->err_clear, "PyErr_Clear");
        bad |= pyapi_lookup(&py->from_long, "PyLong_FromLong");
        bad |= pyapi_lookup(&py->from_ptr, "PyLong_FromVoidPtr");
        bad |= pyapi_lookup(&py->fs_decode, "PyUnicode_DecodeFSDefault");
        bad |= pyapi_lookup(&py->list_set_item, "PyList_SetItem");
        bad |= pyapi_lookup(&py->is_subtype, "PyType_IsSubtype");
        bad |= pyapi_lookup(&py->gc_untrack, "PyObject_GC_UnTrack");
        bad |= pyapi_lookup(&py->gc_collect, "PyGC_Collect");
        (void) pyapi_lookup(&py->enter_tracing, "PyThreadState_EnterTracing");
        (void) pyapi_lookup(&py->leave_tracing, "PyThreadState_LeaveTracing");
        py->long_type = dlsym(RTLD_DEFAULT, "PyLong_Type");
        py->module_type = dlsym(RTLD_DEFAULT, "PyModule_Type");
        py->dict_type = dlsym(RTLD_DEFAULT, "PyDict_Type");
        py->str_type = dlsym(RTLD_DEFAULT, "PyUnicode_Type");
        bad |= pyapi_lookup(&py->type_flags, "PyType_GetFlags");
        bad |= pyapi_lookup(&py->str_len, "PyUnicode_GetLength");
        bad |= pyapi_lookup(&py->str_char, "PyUnicode_ReadChar");
        bad |= pyapi_lookup(&py->str_is, "PyUnicode_CompareWithASCIIString");
        bad |= pyapi_lookup(&py->dict_set, "PyDict_SetItem");
        bad |= pyapi_lookup(&py->list_size, "PyList_Size");
        bad |= pyapi_lookup(&py->weakref_get, "PyWeakref_GetObject");
        bad |= pyapi_lookup(&py->module_dict, "PyModule_GetDict");
        bad |= pyapi_lookup(&py->list_item, "PyList_GetItem");
        bad |= pyapi_lookup(&py->weakref_new, "PyWeakref_NewRef");
        bad |= pyapi_lookup(&py->setitem, "PyObject_SetItem");
        bad |= pyapi_lookup(&py->dict_new, "PyDict_New");
        bad |= pyapi_lookup(&py->dict_set_str, "PyDict_SetItemString");
        bad |= pyapi_lookup(&py->dict_del_str, "PyDict_DelItemString");
        bad |= pyapi_lookup(&py->incref, "Py_IncRef");
        bad |= pyapi_lookup(&py->decref, "Py_DecRef");
        py->none = dlsym(RTLD_DEFAULT, "_Py_NoneStruct");
        py->yes = dlsym(RTLD_DEFAULT, "_Py_TrueStruct");
        py->no = dlsym(RTLD_DEFAULT, "_Py_FalseStruct");
        return bad || !py->none || !py->yes || !py->no || !py->long_type || !py->module_type ||
                       !py->str_type || !py->dict_type ? -1 : 0;
}

int pyapi_is_a(const struct pyapi *py, pyobj *obj, pyobj *type)
{
        pyobj *t = py->type(obj);
        int yes = py->is_subtype(t, type);

        py->decref(t);
        return yes;
}
