/* kamp's C API: a training session for science codes, callable from C99, C++ and (through
 * `use kamp`) Fortran. Every function returns a kamp_status; on anything but KAMP_OK,
 * kamp_last_error() says what went wrong and how to fix it, and the session is unchanged.
 * docs/science-codes.md has the rules and a whole example. */
#ifndef KAMP_H
#define KAMP_H

#include <stdint.h>

#include "kamp_version.h"

#if defined(_WIN32)
#define KAMP_API
#else
#define KAMP_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kamp_status {
  KAMP_OK = 0,
  KAMP_ERROR_INVALID_HANDLE = 1,   /* a null handle, or one already destroyed */
  KAMP_ERROR_INVALID_ARGUMENT = 2, /* a tensor, path or option that cannot be used */
  KAMP_ERROR_CONFIG = 3,           /* the config cannot be read or names something unknown */
  KAMP_ERROR_IO = 4,               /* a checkpoint cannot be written or read */
  KAMP_ERROR_UNSUPPORTED = 5,      /* this build lacks what was asked (MPI, a GPU backend) */
  KAMP_ERROR_INTERNAL = 6          /* a bug in kamp: please report the message */
} kamp_status;

typedef enum kamp_dtype {
  KAMP_FP64 = 0,
  KAMP_FP32 = 1,
  KAMP_BF16 = 2, /* uint16_t bit patterns */
  KAMP_FP16 = 3, /* IEEE binary16 bit patterns */
  KAMP_INT32 = 4,
  KAMP_INT64 = 5
} kamp_dtype;

typedef enum kamp_device { KAMP_HOST = 0, KAMP_CUDA = 1, KAMP_HIP = 2 } kamp_device;

#define KAMP_MAX_RANK 8

/* An array where it lies: nothing is copied. `shape` and `strides` (in elements; NULL: C
 * contiguous) are in C order, the last dimension the fastest in a contiguous array; they are
 * read during the call only. The network sees (batch, features): batch_dims = n > 0 takes the
 * first n dimensions as the batch, n < 0 the last -n; 0 means 1. The other dimensions are the
 * features. Both are flattened in C order. */
typedef struct kamp_tensor {
  void* data;
  int32_t rank; /* 1 to KAMP_MAX_RANK */
  const int64_t* shape;
  const int64_t* strides;
  int32_t dtype;  /* a kamp_dtype (a fixed-size field: enums may differ in size between compilers) */
  int32_t device; /* a kamp_device */
  int32_t batch_dims;
} kamp_tensor;

typedef struct kamp_session kamp_session;

typedef struct kamp_session_options {
  int32_t use_mpi;  /* nonzero: train data parallel over mpi_comm (kamp built with MPI) */
  int32_t mpi_comm; /* the communicator as MPI_Fint: MPI_Comm_c2f(comm) in C, comm%MPI_VAL in Fortran */
  void* stream;     /* a cudaStream_t or hipStream_t for every kernel; NULL: the default stream */
} kamp_session_options;

typedef struct kamp_report {
  int64_t train_steps;     /* train_step calls */
  int64_t optimizer_steps; /* optimizer steps taken */
  int64_t skipped_steps;   /* optimizer steps skipped for inf/NaN */
  int32_t last_skip_cause; /* 0 none, 1 non-finite inputs, 2 non-finite labels, 3 non-finite gradients */
  double loss;             /* the last micro-batch's mean loss */
  float loss_scale;        /* amp_fp16's dynamic scale (1 otherwise) */
  float grad_norm;         /* the gradients' L2 norm at the last optimizer step */
} kamp_report;

/* The version of the library linked (compare with the KAMP_VERSION_* macros of the header). */
KAMP_API void kamp_version(int32_t* major, int32_t* minor, int32_t* patch);
/* The message of this thread's last failed call ("" if none); valid until the next kamp call. */
KAMP_API const char* kamp_last_error(void);

/* A session from a YAML or JSON file, or from the text of one. options may be NULL. The first
 * session initializes kamp's Kokkos (OMP_NUM_THREADS threads) unless the program already did. */
KAMP_API kamp_status kamp_session_create(kamp_session** session, const char* config_path,
                                         const kamp_session_options* options);
KAMP_API kamp_status kamp_session_create_from_text(kamp_session** session, const char* config_text,
                                                   const kamp_session_options* options);
/* Frees the session and sets *session to NULL; a NULL *session is a no-op. */
KAMP_API kamp_status kamp_session_destroy(kamp_session** session);

/* One training step; nothing waits for the device. */
KAMP_API kamp_status kamp_session_train_step(kamp_session* session, const kamp_tensor* inputs,
                                             const kamp_tensor* labels);
/* The network's outputs for inputs, written into outputs (a floating dtype). */
KAMP_API kamp_status kamp_session_predict(kamp_session* session, const kamp_tensor* inputs, const kamp_tensor* outputs);
/* The last micro-batch's mean loss (waits for the device). */
KAMP_API kamp_status kamp_session_loss(kamp_session* session, double* loss);
KAMP_API kamp_status kamp_session_report(kamp_session* session, kamp_report* report);
/* HDF5: written via path.tmp then renamed (rank 0 writes); h5py reads f["model/layers.0.weight"]. */
KAMP_API kamp_status kamp_session_save(kamp_session* session, const char* path);
/* Reads a file save() wrote for the same network, precision and optimizer. */
KAMP_API kamp_status kamp_session_load(kamp_session* session, const char* path);

/* For kamp's language bindings (the Fortran module): records message as this thread's last
 * error and returns status. */
KAMP_API kamp_status kamp_binding_error(kamp_status status, const char* message);

/* Finalizes the Kokkos that kamp initialized (sessions still alive are destroyed first).
 * Optional: at exit kamp does it itself. Kokkos cannot start again in a process, so a create
 * after it fails (KAMP_ERROR_INVALID_ARGUMENT). */
KAMP_API kamp_status kamp_finalize(void);

#ifdef __cplusplus
}
#endif

/* DLPack's DLTensor as a kamp_tensor (include dlpack.h first): the same array, no copy.
 * DLPACK_VERSION is DLPack 0.x's macro, DLPACK_MAJOR_VERSION 1.x's. */
#if defined(DLPACK_VERSION) || defined(DLPACK_MAJOR_VERSION)
static inline kamp_status kamp_tensor_from_dlpack(const DLTensor* t, int32_t batch_dims, kamp_tensor* out) {
  kamp_tensor k;
  int ok = t != 0 && t->dtype.lanes == 1;
  k.dtype = KAMP_FP32;
  if (ok && t->dtype.code == kDLFloat && t->dtype.bits == 64)
    k.dtype = KAMP_FP64;
  else if (ok && t->dtype.code == kDLFloat && t->dtype.bits == 32)
    k.dtype = KAMP_FP32;
  else if (ok && t->dtype.code == kDLFloat && t->dtype.bits == 16)
    k.dtype = KAMP_FP16;
  else if (ok && t->dtype.code == kDLBfloat && t->dtype.bits == 16)
    k.dtype = KAMP_BF16;
  else if (ok && t->dtype.code == kDLInt && t->dtype.bits == 32)
    k.dtype = KAMP_INT32;
  else if (ok && t->dtype.code == kDLInt && t->dtype.bits == 64)
    k.dtype = KAMP_INT64;
  else
    ok = 0;
  k.device = KAMP_HOST;
  if (ok && (t->device.device_type == kDLCUDA || t->device.device_type == kDLCUDAManaged))
    k.device = KAMP_CUDA;
  else if (ok && t->device.device_type == kDLROCM)
    k.device = KAMP_HIP;
  else if (ok && t->device.device_type != kDLCPU && t->device.device_type != kDLCUDAHost &&
           t->device.device_type != kDLROCMHost)
    ok = 0;
  if (!ok)
    return kamp_binding_error(
        KAMP_ERROR_INVALID_ARGUMENT,
        "kamp_tensor_from_dlpack: a NULL tensor, or a dtype or device kamp does not read (it reads "
        "float 64/32/16, bfloat 16, int 32/64 with one lane, on CPU, CUDA or ROCm)");
  k.data = (char*)t->data + t->byte_offset;
  k.rank = t->ndim;
  k.shape = t->shape;
  k.strides = t->strides;
  k.batch_dims = batch_dims;
  *out = k;
  return KAMP_OK;
}
#endif

#endif
