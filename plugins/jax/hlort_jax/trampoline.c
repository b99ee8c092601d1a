/* The C side of the bridge: a PJRT_Api table whose every entry calls into Python safely.
 *
 * Each of the 129 entries (and the two of the Shardings extension chained on extension_start)
 * is a tiny function that (1) answers from a cache when Python said the
 * answer of this getter for this handle never changes, (2) refuses politely once Python is
 * shutting down (success for calls jaxlib treats as infallible, an UNAVAILABLE error otherwise),
 * (3) takes the GIL, saves any pending Python exception (jaxlib destroys buffers while an
 * exception unwinds), calls the Python handler of that slot with the argument struct's
 * address, and restores the exception. PJRT_Error objects live here, so destroying and reading
 * them never needs Python. All the logic is in Python (hlort_jax/handlers_*.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt_layout.h" /* generated from abi_table.py by setup.py */

typedef void* (*hl_fn)(void* args);

typedef struct {
  size_t struct_size;
  void* extension_start;
  struct {
    size_t struct_size;
    void* extension_start;
    int major_version;
    int minor_version;
  } version;
  hl_fn functions[HL_NUM_FUNCTIONS];
} hl_api;

/* Facts of the reference header, checked against the generated declarations. */
_Static_assert(sizeof(hl_api) == HL_API_STRUCT_SIZE, "PJRT_Api must be 1072 bytes");
_Static_assert(offsetof(hl_api, functions) == 40, "function pointers start at byte 40");
_Static_assert(sizeof(hl_MemoryLayout) == 80, "PJRT_Buffer_MemoryLayout is 80 bytes");
_Static_assert(sizeof(hl_NamedValue) == 56, "PJRT_NamedValue is 56 bytes");
_Static_assert(offsetof(hl_NamedValue, value) == 40, "NamedValue's union is at 40");
_Static_assert(offsetof(hl_Client_BufferFromHostBuffer_Args, buffer) == 112, "buffer at 112");
_Static_assert(offsetof(hl_LoadedExecutable_Execute_Args, execute_device) == 72, "at 72");
_Static_assert(offsetof(hl_ExecuteOptions, incarnation_ids) == 104, "at 104");
_Static_assert(offsetof(hl_Buffer_GetMemoryLayout_Args, layout) == 24, "layout at 24");
_Static_assert(offsetof(hl_Device_MemoryStats_Args, peak_pool_bytes_is_set) == 184, "at 184");

/* ---- errors ------------------------------------------------------------------------------ */
typedef struct {
  int code;
  int is_static;
  size_t size;
  char message[];
} hl_error;

static hl_error* make_error(int code, const char* message, size_t size) {
  hl_error* e = (hl_error*)malloc(sizeof(hl_error) + size + 1);
  if (e == NULL) return NULL;
  e->code = code;
  e->is_static = 0;
  e->size = size;
  memcpy(e->message, message, size);
  e->message[size] = 0;
  return e;
}

static struct {
  int code;
  int is_static;
  size_t size;
  char message[96];
} g_shutdown_error = {14, 1, 60, "hlort-jax: the Python interpreter is shutting down (no calls)"};

static hl_error* g_no_memory_error;

/* ---- the Shardings extension, chained on PJRT_Api.extension_start ------------------------ */
typedef struct {
  size_t struct_size;
  int type; /* PJRT_Extension_Type */
  void* next;
  hl_fn parameter_shardings;
  hl_fn output_shardings;
} hl_shardings_extension;
_Static_assert(sizeof(hl_shardings_extension) == HL_SHARDINGS_EXTENSION_SIZE,
               "PJRT_Shardings_Extension is 40 bytes");
_Static_assert(offsetof(hl_shardings_extension, parameter_shardings) == 24, "after the base");

/* ---- state ------------------------------------------------------------------------------- */
static PyObject* g_handlers[HL_NUM_SLOTS];
static volatile int g_shut_down = 0;
static hl_api g_api;
static hl_shardings_extension g_shardings;

/* ---- the answer cache of hot getters ------------------------------------------------------ */
#define HL_CACHE_SLOTS 8192
#define HL_CACHE_BYTES 48
typedef struct {
  void* handle; /* NULL: empty; (void*)1: removed */
  int index;
  int size;
  unsigned char data[HL_CACHE_BYTES];
} hl_cache_entry;
static hl_cache_entry g_cache[HL_CACHE_SLOTS];
static pthread_mutex_t g_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  int handle_offset, out_offset, out_size;
} g_cacheable[HL_NUM_SLOTS];

static size_t cache_slot(void* handle, int index) {
  uintptr_t h = (uintptr_t)handle * 0x9E3779B97F4A7C15ull + (uintptr_t)index * 0x85EBCA6Bu;
  return (size_t)(h >> 17) % HL_CACHE_SLOTS;
}

static int cache_lookup(int index, void* handle, unsigned char* out, int size) {
  int hit = 0;
  pthread_mutex_lock(&g_cache_lock);
  for (size_t i = cache_slot(handle, index), n = 0; n < HL_CACHE_SLOTS; ++n) {
    hl_cache_entry* e = &g_cache[(i + n) % HL_CACHE_SLOTS];
    if (e->handle == NULL) break;
    if (e->handle == handle && e->index == index && e->size == size) {
      memcpy(out, e->data, (size_t)size);
      hit = 1;
      break;
    }
  }
  pthread_mutex_unlock(&g_cache_lock);
  return hit;
}

static void cache_store(int index, void* handle, const unsigned char* data, int size) {
  pthread_mutex_lock(&g_cache_lock);
  for (size_t i = cache_slot(handle, index), n = 0; n < HL_CACHE_SLOTS / 2; ++n) {
    hl_cache_entry* e = &g_cache[(i + n) % HL_CACHE_SLOTS];
    if (e->handle == NULL || e->handle == (void*)1 ||
        (e->handle == handle && e->index == index)) {
      e->handle = handle;
      e->index = index;
      e->size = size;
      memcpy(e->data, data, (size_t)size);
      break;
    }
  }
  pthread_mutex_unlock(&g_cache_lock);
}

static void cache_forget(void* handle) {
  pthread_mutex_lock(&g_cache_lock);
  for (size_t i = 0; i < HL_CACHE_SLOTS; ++i)
    if (g_cache[i].handle == handle) g_cache[i].handle = (void*)1;
  pthread_mutex_unlock(&g_cache_lock);
}

/* ---- the call into Python ----------------------------------------------------------------- */
static hl_error* error_from_exception(int index) {
  /* A handler raised (a bug: handlers turn HlortError into PJRT errors themselves). */
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyObject* text = value ? PyObject_Str(value) : NULL;
  const char* msg = text ? PyUnicode_AsUTF8(text) : NULL;
  char buf[1024];
  snprintf(buf, sizeof buf, "hlort-jax: PJRT_%s raised in Python: %s", HL_FUNCTION_NAMES[index],
           msg ? msg : "(no message)");
  PyErr_Clear();
  Py_XDECREF(text);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  hl_error* e = make_error(13, buf, strlen(buf));
  return e ? e : g_no_memory_error;
}

static void* call_python(int index, void* args) {
  int out_size = g_cacheable[index].out_size;
  void* handle = NULL;
  if (out_size > 0) {
    size_t struct_size = *(size_t*)args;
    if (struct_size >= (size_t)(g_cacheable[index].out_offset + out_size)) {
      handle = *(void**)((char*)args + g_cacheable[index].handle_offset);
      if (cache_lookup(index, handle, (unsigned char*)args + g_cacheable[index].out_offset,
                       out_size))
        return NULL;
    } else {
      out_size = 0;
    }
  }
  if (g_shut_down || !Py_IsInitialized() || _Py_IsFinalizing()) {
    return HL_NEVER_FAIL[index] ? NULL : (void*)&g_shutdown_error;
  }
  PyGILState_STATE gil = PyGILState_Ensure();
  PyObject *saved_type, *saved_value, *saved_tb;
  PyErr_Fetch(&saved_type, &saved_value, &saved_tb);
  void* answer = NULL;
  PyObject* handler = g_handlers[index];
  if (handler == NULL) {
    char buf[160];
    snprintf(buf, sizeof buf, "PJRT_%s is not implemented by hlort-jax (no handler)",
             HL_FUNCTION_NAMES[index]);
    answer = make_error(12, buf, strlen(buf));
  } else {
    PyObject* address = PyLong_FromVoidPtr(args);
    PyObject* result = address ? PyObject_CallOneArg(handler, address) : NULL;
    Py_XDECREF(address);
    if (result == NULL) {
      answer = error_from_exception(index);
    } else {
      answer = result == Py_None ? NULL : PyLong_AsVoidPtr(result);
      if (PyErr_Occurred()) answer = error_from_exception(index);
      Py_DECREF(result);
    }
  }
  if (answer == NULL && out_size > 0 && handle != NULL)
    cache_store(index, handle, (unsigned char*)args + g_cacheable[index].out_offset, out_size);
  PyErr_Restore(saved_type, saved_value, saved_tb);
  PyGILState_Release(gil);
  if (answer != NULL && HL_NEVER_FAIL[index]) {
    hl_error* e = (hl_error*)answer;
    fprintf(stderr, "hlort-jax: PJRT_%s failed (reported as success): %.*s\n",
            HL_FUNCTION_NAMES[index], (int)e->size, e->message);
    if (!e->is_static) free(e);
    answer = NULL;
  }
  return answer;
}

/* ---- the three error functions, native ---------------------------------------------------- */
static void* error_destroy(void* a) {
  hl_error* e = (hl_error*)((hl_Error_Destroy_Args*)a)->error;
  if (e != NULL && !e->is_static) free(e);
  return NULL;
}
static void* error_message(void* a) {
  hl_Error_Message_Args* args = (hl_Error_Message_Args*)a;
  hl_error* e = (hl_error*)args->error;
  args->message = e->message;
  args->message_size = e->size;
  return NULL;
}
static void* error_getcode(void* a) {
  hl_Error_GetCode_Args* args = (hl_Error_GetCode_Args*)a;
  args->code = ((hl_error*)args->error)->code;
  return NULL;
}

/* One entry per slot: HL_SLOT(i) calls call_python(i, args). */
#define HL_SLOT(i) \
  static void* slot_##i(void* args) { return call_python(i, args); }
#define HL_S10(t) HL_SLOT(t##0) HL_SLOT(t##1) HL_SLOT(t##2) HL_SLOT(t##3) HL_SLOT(t##4) \
  HL_SLOT(t##5) HL_SLOT(t##6) HL_SLOT(t##7) HL_SLOT(t##8) HL_SLOT(t##9)
HL_SLOT(0) HL_SLOT(1) HL_SLOT(2) HL_SLOT(3) HL_SLOT(4) HL_SLOT(5) HL_SLOT(6) HL_SLOT(7)
HL_SLOT(8) HL_SLOT(9)
HL_S10(1) HL_S10(2) HL_S10(3) HL_S10(4) HL_S10(5) HL_S10(6) HL_S10(7) HL_S10(8) HL_S10(9)
HL_S10(10) HL_S10(11)
HL_SLOT(120) HL_SLOT(121) HL_SLOT(122) HL_SLOT(123) HL_SLOT(124) HL_SLOT(125) HL_SLOT(126)
HL_SLOT(127) HL_SLOT(128) HL_SLOT(129) HL_SLOT(130)

#define HL_P10(t) slot_##t##0, slot_##t##1, slot_##t##2, slot_##t##3, slot_##t##4, \
  slot_##t##5, slot_##t##6, slot_##t##7, slot_##t##8, slot_##t##9
_Static_assert(HL_NUM_SLOTS == 131, "one HL_SLOT per slot");
static const hl_fn g_slots[HL_NUM_SLOTS] = {
    slot_0, slot_1, slot_2, slot_3, slot_4, slot_5, slot_6, slot_7, slot_8, slot_9,
    HL_P10(1), HL_P10(2), HL_P10(3), HL_P10(4), HL_P10(5), HL_P10(6), HL_P10(7), HL_P10(8),
    HL_P10(9), HL_P10(10), HL_P10(11),
    slot_120, slot_121, slot_122, slot_123, slot_124, slot_125, slot_126, slot_127, slot_128,
    slot_129, slot_130};

/* ---- blobs: bytes handed to jaxlib with a deleter ----------------------------------------- */
static void free_blob(void* blob) { free(blob); }
static void no_op_deleter(void* ignored) { (void)ignored; }

/* ---- module functions --------------------------------------------------------------------- */
static PyObject* py_install(PyObject* self, PyObject* handlers) {
  if (!PyTuple_Check(handlers) || PyTuple_GET_SIZE(handlers) != HL_NUM_SLOTS) {
    PyErr_Format(PyExc_ValueError, "install() wants a tuple of %d handlers", HL_NUM_SLOTS);
    return NULL;
  }
  for (int i = 0; i < HL_NUM_SLOTS; ++i) {
    PyObject* h = PyTuple_GET_ITEM(handlers, i);
    Py_XDECREF(g_handlers[i]);
    g_handlers[i] = h == Py_None ? NULL : (Py_INCREF(h), h);
  }
  Py_RETURN_NONE;
}

static PyObject* py_api_capsule(PyObject* self, PyObject* unused) {
  return PyCapsule_New(&g_api, "pjrt_c_api", NULL);
}

static PyObject* py_api_address(PyObject* self, PyObject* unused) {
  return PyLong_FromVoidPtr(&g_api);
}

static PyObject* py_make_error(PyObject* self, PyObject* args) {
  int code;
  const char* msg;
  Py_ssize_t size;
  if (!PyArg_ParseTuple(args, "is#", &code, &msg, &size)) return NULL;
  hl_error* e = make_error(code, msg, (size_t)size);
  return PyLong_FromVoidPtr(e ? e : g_no_memory_error);
}

static PyObject* py_error_parts(PyObject* self, PyObject* arg) {
  hl_error* e = (hl_error*)PyLong_AsVoidPtr(arg);
  if (e == NULL) Py_RETURN_NONE;
  return Py_BuildValue("(is#)", e->code, e->message, (Py_ssize_t)e->size);
}

static PyObject* py_make_blob(PyObject* self, PyObject* arg) {
  char* data;
  Py_ssize_t size;
  if (PyBytes_AsStringAndSize(arg, &data, &size) < 0) return NULL;
  void* blob = malloc(size ? (size_t)size : 1);
  if (blob == NULL) return PyErr_NoMemory();
  memcpy(blob, data, (size_t)size);
  return PyLong_FromVoidPtr(blob);
}

static PyObject* py_set_cacheable(PyObject* self, PyObject* args) {
  int index, handle_offset, out_offset, out_size;
  if (!PyArg_ParseTuple(args, "iiii", &index, &handle_offset, &out_offset, &out_size))
    return NULL;
  if (index < 0 || index >= HL_NUM_SLOTS || out_size <= 0 || out_size > HL_CACHE_BYTES) {
    PyErr_SetString(PyExc_ValueError, "bad cacheable slot");
    return NULL;
  }
  g_cacheable[index].handle_offset = handle_offset;
  g_cacheable[index].out_offset = out_offset;
  g_cacheable[index].out_size = out_size;
  Py_RETURN_NONE;
}

static PyObject* py_prime(PyObject* self, PyObject* args) {
  int index;
  PyObject* handle_obj;
  const char* data;
  Py_ssize_t size;
  if (!PyArg_ParseTuple(args, "iOy#", &index, &handle_obj, &data, &size)) return NULL;
  void* handle = PyLong_AsVoidPtr(handle_obj);
  if (PyErr_Occurred()) return NULL;
  if (index < 0 || index >= HL_NUM_SLOTS || g_cacheable[index].out_size != size) {
    PyErr_SetString(PyExc_ValueError, "prime(): not a cacheable slot of that answer size");
    return NULL;
  }
  cache_store(index, handle, (const unsigned char*)data, (int)size);
  Py_RETURN_NONE;
}

static PyObject* py_forget(PyObject* self, PyObject* arg) {
  void* handle = PyLong_AsVoidPtr(arg);
  if (PyErr_Occurred()) return NULL;
  Py_BEGIN_ALLOW_THREADS cache_forget(handle);
  Py_END_ALLOW_THREADS Py_RETURN_NONE;
}

static PyObject* py_shutdown(PyObject* self, PyObject* unused) {
  g_shut_down = 1;
  Py_RETURN_NONE;
}

static PyObject* py_layout(PyObject* self, PyObject* unused) {
  size_t n = sizeof HL_LAYOUT / sizeof HL_LAYOUT[0];
  PyObject* out = PyList_New((Py_ssize_t)n);
  if (out == NULL) return NULL;
  for (size_t i = 0; i < n; ++i)
    PyList_SET_ITEM(out, (Py_ssize_t)i,
                    Py_BuildValue("(ssn)", HL_LAYOUT[i].s, HL_LAYOUT[i].f,
                                  (Py_ssize_t)HL_LAYOUT[i].v));
  return out;
}

static PyObject* py_addresses(PyObject* self, PyObject* unused) {
  return Py_BuildValue("{s:N,s:N,s:n}", "free_blob", PyLong_FromVoidPtr((void*)free_blob),
                       "no_op_deleter", PyLong_FromVoidPtr((void*)no_op_deleter),
                       "api_struct_size", (Py_ssize_t)sizeof(hl_api));
}

static PyMethodDef methods[] = {
    {"install", py_install, METH_O, "Set the tuple of 131 Python handlers (None: no handler)."},
    {"api_capsule", py_api_capsule, METH_NOARGS, "The PJRT_Api as a 'pjrt_c_api' capsule."},
    {"api_address", py_api_address, METH_NOARGS, "The PJRT_Api's address."},
    {"make_error", py_make_error, METH_VARARGS, "(code, message) -> PJRT_Error address."},
    {"error_parts", py_error_parts, METH_O, "PJRT_Error address -> (code, message)."},
    {"make_blob", py_make_blob, METH_O, "bytes -> malloc'ed copy's address (free_blob frees)."},
    {"set_cacheable", py_set_cacheable, METH_VARARGS,
     "(index, handle_offset, out_offset, out_size): cache this getter's answer per handle."},
    {"prime", py_prime, METH_VARARGS,
     "(index, handle, answer bytes): store a cacheable getter's answer before it is asked."},
    {"forget", py_forget, METH_O, "Drop the cached answers of a handle (it was destroyed)."},
    {"shutdown", py_shutdown, METH_NOARGS, "From now on, never call Python."},
    {"layout", py_layout, METH_NOARGS, "(struct, field, offset) rows from the C compiler."},
    {"addresses", py_addresses, METH_NOARGS, "Addresses of the native deleters."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_trampoline",
                                    "PJRT C API trampoline into Python.", -1, methods};

PyMODINIT_FUNC PyInit__trampoline(void) {
  static const char oom[] = "hlort-jax: out of memory while making an error";
  g_no_memory_error = (hl_error*)malloc(sizeof(hl_error) + sizeof oom);
  if (g_no_memory_error == NULL) return PyErr_NoMemory();
  g_no_memory_error->code = 8;
  g_no_memory_error->is_static = 1;
  g_no_memory_error->size = sizeof oom - 1;
  memcpy(g_no_memory_error->message, oom, sizeof oom);
  g_shutdown_error.size = strlen(g_shutdown_error.message);
  g_shardings.struct_size = sizeof g_shardings;
  g_shardings.type = HL_SHARDINGS_EXTENSION_TYPE;
  g_shardings.next = NULL;
  g_shardings.parameter_shardings = g_slots[HL_SLOT_SHARDINGS_PARAMETERS];
  g_shardings.output_shardings = g_slots[HL_SLOT_SHARDINGS_OUTPUTS];
  g_api.struct_size = sizeof(hl_api);
  g_api.extension_start = &g_shardings;
  g_api.version.struct_size = sizeof g_api.version;
  g_api.version.major_version = HL_API_MAJOR;
  g_api.version.minor_version = HL_API_MINOR;
  for (int i = 0; i < HL_NUM_FUNCTIONS; ++i) g_api.functions[i] = g_slots[i];
  g_api.functions[0] = error_destroy;
  g_api.functions[1] = error_message;
  g_api.functions[2] = error_getcode;
  return PyModule_Create(&module);
}
