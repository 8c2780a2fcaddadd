// A tiny extension for the cache and lock tests: plain CPython API, no torch headers, so it compiles in a second.
#include <Python.h>

#define ACCELHAL_CAT2(a, b) a##b
#define ACCELHAL_CAT(a, b) ACCELHAL_CAT2(a, b)
#define ACCELHAL_STR2(x) #x
#define ACCELHAL_STR(x) ACCELHAL_STR2(x)

static PyObject* answer(PyObject*, PyObject*) { return PyLong_FromLong(42); }

static PyMethodDef methods[] = {{"answer", answer, METH_NOARGS, "Return 42."}, {nullptr, nullptr, 0, nullptr}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, ACCELHAL_STR(TORCH_EXTENSION_NAME), "tiny test op", -1,
                                    methods};

PyMODINIT_FUNC ACCELHAL_CAT(PyInit_, TORCH_EXTENSION_NAME)(void) { return PyModule_Create(&module); }
