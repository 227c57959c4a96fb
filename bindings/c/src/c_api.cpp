// kamp.h over kamp::session: handles checked against the live set (a freed or foreign pointer is
// an error, not a crash), every exception turned into a status and this thread's message.
#include <kamp.h>

#include <kamp/config.hpp>
#include <kamp/kernels/execution_spaces.hpp>
#include <kamp/model/training/session.hpp>

#include <Kokkos_Core.hpp>

#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <utility>

struct kamp_session {
  kamp::session<> session;
};

namespace {

thread_local std::string last_error;

// A failure with the status it reports; every other exception takes the call's default status.
struct api_error : std::runtime_error {
  kamp_status status;
  api_error(kamp_status s, const std::string& message) : std::runtime_error(message), status(s) {}
};

struct registry {
  std::mutex mutex;
  std::unordered_set<kamp_session*> live;
  bool kokkos_ours = false;
  bool finalized = false;  // Kokkos cannot start again in this process
};
registry& handles() {
  static registry r;
  return r;
}

template <class F>
kamp_status guarded(kamp_status failure, F&& f) {
  try {
    f();
    last_error.clear();
    return KAMP_OK;
  } catch (const api_error& e) {
    last_error = e.what();
    return e.status;
  } catch (const std::bad_alloc&) {
    last_error = "kamp: out of memory; use a smaller batch or network";
    return KAMP_ERROR_INVALID_ARGUMENT;
  } catch (const std::exception& e) {
    last_error = e.what();
    return failure;
  } catch (...) {
    last_error = "kamp: an unknown exception (a bug in kamp: please report it)";
    return KAMP_ERROR_INTERNAL;
  }
}

kamp::session<>& session_of(kamp_session* h, const char* api) {
  if (h == nullptr) throw api_error(KAMP_ERROR_INVALID_HANDLE, std::string(api) + ": the session handle is NULL");
  registry& r = handles();
  const std::lock_guard<std::mutex> lock(r.mutex);
  if (r.live.count(h) == 0)
    throw api_error(KAMP_ERROR_INVALID_HANDLE, std::string(api) +
                                                   ": the session handle is not a live session (destroyed, or "
                                                   "never created by kamp_session_create)");
  return h->session;
}

const char* backend_name() { return Kokkos::DefaultExecutionSpace::name(); }

kamp::memory_kind memory_of(const kamp_tensor& t, const char* api, const char* what) {
  // Built only on failure: a step pays for no string.
  const auto where = [&] { return std::string(api) + ": " + what; };
  switch (t.device) {
    case KAMP_HOST:
      break;
    case KAMP_CUDA:
#if !defined(KOKKOS_ENABLE_CUDA)
      throw api_error(KAMP_ERROR_UNSUPPORTED, where() + " is CUDA memory, but this kamp runs on " + backend_name() +
                                                  "; build kamp against a CUDA Kokkos, or pass host memory");
#endif
      break;
    case KAMP_HIP:
#if !defined(KOKKOS_ENABLE_HIP)
      throw api_error(KAMP_ERROR_UNSUPPORTED, where() + " is HIP memory, but this kamp runs on " + backend_name() +
                                                  "; build kamp against a HIP Kokkos, or pass host memory");
#endif
      break;
    default:
      throw api_error(KAMP_ERROR_INVALID_ARGUMENT, where() + " has device " + std::to_string(int(t.device)) +
                                                       "; use KAMP_HOST, KAMP_CUDA or KAMP_HIP");
  }
  const bool declared_device = t.device != KAMP_HOST;
#if defined(KOKKOS_ENABLE_CUDA)
  // Where the CUDA runtime knows the address, it must agree with the declaration.
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, t.data) == cudaSuccess) {
    const bool on_device = attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
    if (declared_device && !on_device)
      throw api_error(KAMP_ERROR_INVALID_ARGUMENT, where() +
                                                       " is declared CUDA memory but the address is host memory; "
                                                       "declare it KAMP_HOST");
    if (!declared_device && attributes.type == cudaMemoryTypeDevice)
      throw api_error(KAMP_ERROR_INVALID_ARGUMENT, where() +
                                                       " is declared host memory but the address is CUDA device "
                                                       "memory; declare it KAMP_CUDA");
  }
  cudaGetLastError();  // a host address leaves an error behind on older runtimes
#endif
  return declared_device ? kamp::memory_kind::device : kamp::memory_kind::host;
}

kamp::tensor_ref tensor_of(const kamp_tensor* t, const char* api, const char* what) {
  // Built only on failure: a step pays for no string.
  const auto where = [&] { return std::string(api) + ": " + what; };
  if (t == nullptr) throw api_error(KAMP_ERROR_INVALID_ARGUMENT, where() + " is NULL (pass a kamp_tensor)");
  kamp::tensor_ref r;
  if (t->rank < 1 || t->rank > KAMP_MAX_RANK)
    throw api_error(KAMP_ERROR_INVALID_ARGUMENT, where() + " has rank " + std::to_string(t->rank) +
                                                     "; kamp reads 1 to " + std::to_string(KAMP_MAX_RANK));
  if (t->shape == nullptr) throw api_error(KAMP_ERROR_INVALID_ARGUMENT, where() + " has no shape (NULL)");
  // Indexed by kamp_dtype's values (kamp.h numbers them 0 to 5 in this order).
  constexpr kamp::element_kind kinds[] = {kamp::element_kind::fp64,  kamp::element_kind::fp32,
                                          kamp::element_kind::bf16,  kamp::element_kind::fp16,
                                          kamp::element_kind::int32, kamp::element_kind::int64};
  if (t->dtype < 0 || t->dtype > KAMP_INT64)
    throw api_error(KAMP_ERROR_INVALID_ARGUMENT, where() + " has dtype " + std::to_string(t->dtype) +
                                                     "; use KAMP_FP64, KAMP_FP32, KAMP_BF16, KAMP_FP16, KAMP_INT32 "
                                                     "or KAMP_INT64");
  r.type = kinds[t->dtype];
  r.data = t->data;
  r.rank = t->rank;
  r.batch_dims = t->batch_dims == 0 ? 1 : t->batch_dims;
  std::int64_t contiguous = 1;
  for (int d = t->rank - 1; d >= 0; --d) {
    r.shape[d] = t->shape[d];
    r.strides[d] = t->strides != nullptr ? t->strides[d] : contiguous;
    contiguous *= t->shape[d] > 0 ? t->shape[d] : 1;
  }
  if (r.data != nullptr) r.memory = memory_of(*t, api, what);
  return r;
}

Kokkos::DefaultExecutionSpace space_of(const kamp_session_options* options) {
  void* const stream = options != nullptr ? options->stream : nullptr;
  if (stream == nullptr) return Kokkos::DefaultExecutionSpace();
#if defined(KOKKOS_ENABLE_CUDA)
  return Kokkos::Cuda(static_cast<cudaStream_t>(stream));
#elif defined(KOKKOS_ENABLE_HIP)
  return kamp::detail::hip_space(static_cast<hipStream_t>(stream));
#else
  throw api_error(KAMP_ERROR_UNSUPPORTED,
                  std::string("kamp_session_create: a stream was given, but this kamp runs on ") + backend_name() +
                      "; pass NULL, or build kamp against a CUDA or HIP Kokkos");
#endif
}

kamp::dist::communicator ranks_of(const kamp_session_options* options) {
  if (options == nullptr || options->use_mpi == 0) return {};
#ifdef KAMP_HAVE_MPI
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    throw api_error(KAMP_ERROR_INVALID_ARGUMENT,
                    "kamp_session_create: use_mpi is set but MPI is not initialized; call MPI_Init first");
  const MPI_Comm comm = MPI_Comm_f2c(MPI_Fint(options->mpi_comm));
  if (comm == MPI_COMM_NULL)
    throw api_error(KAMP_ERROR_INVALID_ARGUMENT, "kamp_session_create: mpi_comm is MPI_COMM_NULL");
  return kamp::dist::communicator(comm);
#else
  throw api_error(KAMP_ERROR_UNSUPPORTED,
                  "kamp_session_create: use_mpi is set, but this kamp was built without MPI; install MPI "
                  "(libopenmpi-dev) and rebuild kamp");
#endif
}

void finalize_kokkos() {
  registry& r = handles();
  std::unordered_set<kamp_session*> live;
  {
    const std::lock_guard<std::mutex> lock(r.mutex);
    live.swap(r.live);
  }
  for (kamp_session* s : live) delete s;
  const std::lock_guard<std::mutex> lock(r.mutex);
  if (r.kokkos_ours && Kokkos::is_initialized()) {
    Kokkos::finalize();
    r.finalized = true;
  }
  r.kokkos_ours = false;
}

kamp_status create(kamp_session** out, const char* config, bool is_path, const kamp_session_options* options) {
  return guarded(KAMP_ERROR_CONFIG, [&] {
    const char* api = "kamp_session_create";
    if (out == nullptr) throw api_error(KAMP_ERROR_INVALID_ARGUMENT, std::string(api) + ": the output handle is NULL");
    *out = nullptr;
    if (config == nullptr)
      throw api_error(KAMP_ERROR_INVALID_ARGUMENT,
                      std::string(api) + ": the config " + (is_path ? "path" : "text") + " is NULL");
    const kamp::session_config parsed =
        is_path ? kamp::session_config::from_file(config) : kamp::session_config::parse(config, "config text");
    registry& r = handles();
    {
      const std::lock_guard<std::mutex> lock(r.mutex);
      if (r.finalized)
        throw api_error(KAMP_ERROR_INVALID_ARGUMENT, std::string(api) +
                                                         ": kamp_finalize was called, and Kokkos cannot start again "
                                                         "in this process; finalize only at the end");
      if (!Kokkos::is_initialized()) {
        Kokkos::initialize();
        static const bool registered = std::atexit(finalize_kokkos) == 0;
        (void)registered;
        r.kokkos_ours = true;
      }
    }
    auto s =
        std::unique_ptr<kamp_session>(new kamp_session{kamp::session<>(parsed, space_of(options), ranks_of(options))});
    const std::lock_guard<std::mutex> lock(r.mutex);
    r.live.insert(s.get());
    *out = s.release();
  });
}

}  // namespace

extern "C" {

void kamp_version(int32_t* major, int32_t* minor, int32_t* patch) {
  if (major) *major = KAMP_VERSION_MAJOR;
  if (minor) *minor = KAMP_VERSION_MINOR;
  if (patch) *patch = KAMP_VERSION_PATCH;
}

const char* kamp_last_error(void) { return last_error.c_str(); }

kamp_status kamp_session_create(kamp_session** session, const char* config_path, const kamp_session_options* options) {
  return create(session, config_path, true, options);
}

kamp_status kamp_session_create_from_text(kamp_session** session, const char* config_text,
                                          const kamp_session_options* options) {
  return create(session, config_text, false, options);
}

kamp_status kamp_session_destroy(kamp_session** session) {
  return guarded(KAMP_ERROR_INVALID_HANDLE, [&] {
    if (session == nullptr || *session == nullptr) return;
    registry& r = handles();
    {
      const std::lock_guard<std::mutex> lock(r.mutex);
      if (r.live.erase(*session) == 0)
        throw api_error(KAMP_ERROR_INVALID_HANDLE,
                        "kamp_session_destroy: the session handle is not a live session (destroyed twice?)");
    }
    delete *session;
    *session = nullptr;
  });
}

kamp_status kamp_session_train_step(kamp_session* session, const kamp_tensor* inputs, const kamp_tensor* labels) {
  return guarded(KAMP_ERROR_INVALID_ARGUMENT, [&] {
    const char* api = "kamp_session_train_step";
    kamp::session<>& s = session_of(session, api);
    s.train_step(tensor_of(inputs, api, "inputs"), tensor_of(labels, api, "labels"));
  });
}

kamp_status kamp_session_predict(kamp_session* session, const kamp_tensor* inputs, const kamp_tensor* outputs) {
  return guarded(KAMP_ERROR_INVALID_ARGUMENT, [&] {
    const char* api = "kamp_session_predict";
    kamp::session<>& s = session_of(session, api);
    s.predict(tensor_of(inputs, api, "inputs"), tensor_of(outputs, api, "outputs"));
  });
}

kamp_status kamp_session_loss(kamp_session* session, double* loss) {
  return guarded(KAMP_ERROR_INVALID_ARGUMENT, [&] {
    kamp::session<>& s = session_of(session, "kamp_session_loss");
    if (loss == nullptr) throw api_error(KAMP_ERROR_INVALID_ARGUMENT, "kamp_session_loss: the output pointer is NULL");
    Kokkos::deep_copy(*loss, s.loss());
  });
}

kamp_status kamp_session_report(kamp_session* session, kamp_report* report) {
  return guarded(KAMP_ERROR_INVALID_ARGUMENT, [&] {
    kamp::session<>& s = session_of(session, "kamp_session_report");
    if (report == nullptr)
      throw api_error(KAMP_ERROR_INVALID_ARGUMENT, "kamp_session_report: the output pointer is NULL");
    const kamp::session_report r = s.report();
    *report = kamp_report{r.train_steps, r.optimizer_steps, r.skipped_steps, int32_t(r.last_cause),
                          r.loss,        r.loss_scale,      r.grad_norm};
  });
}

kamp_status kamp_session_save(kamp_session* session, const char* path) {
  return guarded(KAMP_ERROR_IO, [&] {
    kamp::session<>& s = session_of(session, "kamp_session_save");
    if (path == nullptr) throw api_error(KAMP_ERROR_INVALID_ARGUMENT, "kamp_session_save: the path is NULL");
    s.save(path);
  });
}

kamp_status kamp_session_load(kamp_session* session, const char* path) {
  return guarded(KAMP_ERROR_IO, [&] {
    kamp::session<>& s = session_of(session, "kamp_session_load");
    if (path == nullptr) throw api_error(KAMP_ERROR_INVALID_ARGUMENT, "kamp_session_load: the path is NULL");
    s.load(path);
  });
}

kamp_status kamp_binding_error(kamp_status status, const char* message) {
  last_error = message != nullptr ? message : "";
  return status;
}

kamp_status kamp_finalize(void) {
  return guarded(KAMP_ERROR_INTERNAL, [] { finalize_kokkos(); });
}

}  // extern "C"
