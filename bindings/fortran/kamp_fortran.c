/* The Fortran module's arrays: ISO_Fortran_binding descriptors (any rank, kind and stride)
 * described as kamp_tensors, in place. Built with the Fortran compiler's own
 * ISO_Fortran_binding.h: descriptors differ between compilers, like .mod files. */
#include <ISO_Fortran_binding.h>
#include <kamp.h>

#include <stdio.h>

/* Fortran dimension k (the first the fastest) is C-order dimension rank-1-k. */
static kamp_status tensor_of(const CFI_cdesc_t* a, const char* what, int32_t batch_dims, int32_t device,
                             int64_t* shape, int64_t* strides, kamp_tensor* t) {
  char message[256];
  kamp_dtype dtype;
  int d;
  switch (a->type) {
    case CFI_type_double: dtype = KAMP_FP64; break;
    case CFI_type_float: dtype = KAMP_FP32; break;
    case CFI_type_int32_t: dtype = KAMP_INT32; break;
    case CFI_type_int64_t: dtype = KAMP_INT64; break;
    default:
      snprintf(message, sizeof message,
               "kamp (Fortran): %s has a type kamp does not read (CFI type %d); use real(real64), real(real32), "
               "integer(int32) or integer(int64)", what, (int)a->type);
      return kamp_binding_error(KAMP_ERROR_INVALID_ARGUMENT, message);
  }
  if (a->rank < 1 || a->rank > KAMP_MAX_RANK) {
    snprintf(message, sizeof message, "kamp (Fortran): %s has rank %d; kamp reads arrays of rank 1 to %d", what,
             (int)a->rank, KAMP_MAX_RANK);
    return kamp_binding_error(KAMP_ERROR_INVALID_ARGUMENT, message);
  }
  for (d = 0; d < a->rank; ++d) {
    const CFI_dim_t* dim = &a->dim[a->rank - 1 - d];
    if (dim->sm % (CFI_index_t)a->elem_len != 0) {
      snprintf(message, sizeof message,
               "kamp (Fortran): %s steps %ld bytes in dimension %d, not a whole number of elements", what,
               (long)dim->sm, (int)(a->rank - d));
      return kamp_binding_error(KAMP_ERROR_INVALID_ARGUMENT, message);
    }
    shape[d] = dim->extent;
    strides[d] = dim->sm / (CFI_index_t)a->elem_len;
  }
  t->data = a->base_addr;
  t->rank = a->rank;
  t->shape = shape;
  t->strides = strides;
  t->dtype = dtype;
  t->device = device;
  t->batch_dims = batch_dims;
  return KAMP_OK;
}

typedef kamp_status (*two_tensor_call)(kamp_session*, const kamp_tensor*, const kamp_tensor*);

/* call(session, a, b) on the two arrays described as kamp_tensors. */
static kamp_status with_tensors(two_tensor_call call, kamp_session* session, const CFI_cdesc_t* a, const char* a_name,
                                const CFI_cdesc_t* b, const char* b_name, int32_t batch_dims, int32_t device) {
  int64_t shape[2][KAMP_MAX_RANK], strides[2][KAMP_MAX_RANK];
  kamp_tensor x, y;
  kamp_status s = tensor_of(a, a_name, batch_dims, device, shape[0], strides[0], &x);
  if (s == KAMP_OK) s = tensor_of(b, b_name, batch_dims, device, shape[1], strides[1], &y);
  return s == KAMP_OK ? call(session, &x, &y) : s;
}

kamp_status kamp_fortran_train_step(kamp_session* session, const CFI_cdesc_t* inputs, const CFI_cdesc_t* labels,
                                    int32_t batch_dims, int32_t device) {
  return with_tensors(kamp_session_train_step, session, inputs, "inputs", labels, "labels", batch_dims, device);
}

kamp_status kamp_fortran_predict(kamp_session* session, const CFI_cdesc_t* inputs, const CFI_cdesc_t* outputs,
                                 int32_t batch_dims, int32_t device) {
  return with_tensors(kamp_session_predict, session, inputs, "inputs", outputs, "outputs", batch_dims, device);
}
