// kamp.h against the C++ session it wraps: the same steps give the same bits, arrays are read
// where they lie in every layout and type, and bad input is a status and a message, never a
// crash, with the session unchanged.
#include "../support/catch.hpp"

#include <dlpack/dlpack.h>
#include <kamp.h>

#include <kamp/model/training/session.hpp>

#include <sys/stat.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace {

constexpr int batch = 8, in = 3, out = 2;

std::string config_text(const char* precision) {
  return std::string(
             "model: {type: mlp, parameters: {layer_sizes: [3, 16, 2], activation: tanh}}\n"
             "optimizer: {type: adamw, parameters: {learning_rate: 1e-2}}\nseed: 7\nprecision: ") +
         precision;
}

// Sample r, feature j of step k's inputs and labels (exact in bf16, so every type holds them).
float x_at(int k, int r, int j) { return float((r * 7 + j * 3 + k * 5) % 17 - 8) / 8.0f; }
float y_at(int k, int r, int j) { return float((r * 5 + j + k) % 9 - 4) / 4.0f; }

struct c_session {
  kamp_session* handle = nullptr;
  explicit c_session(const std::string& text) {
    REQUIRE(kamp_session_create_from_text(&handle, text.c_str(), nullptr) == KAMP_OK);
  }
  ~c_session() { kamp_session_destroy(&handle); }
};

// A (batch, features) array laid out by shape/strides over its own storage, filled from f.
template <class T>
struct array {
  std::vector<T> storage;
  std::vector<std::int64_t> shape, strides;
  kamp_tensor tensor{};
  // shape/strides in C order; `sample(i)`/`feature(i)` give element i's (row, column).
  template <class F>
  array(kamp_dtype dtype, std::vector<std::int64_t> shape_, std::vector<std::int64_t> strides_, int batch_dims,
        std::size_t size, F&& fill)
      : storage(size), shape(std::move(shape_)), strides(std::move(strides_)) {
    tensor =
        kamp_tensor{storage.data(), int32_t(shape.size()), shape.data(), strides.data(), dtype, KAMP_HOST, batch_dims};
    fill(storage);
  }
};

std::vector<float> predictions(kamp_session* s, int k) {
  std::vector<float> x(batch * in), y(batch * out, -1.0f);
  for (int r = 0; r < batch; ++r)
    for (int j = 0; j < in; ++j) x[r * in + j] = x_at(k, r, j);
  const std::int64_t xs[] = {batch, in}, ys[] = {batch, out};
  const kamp_tensor tx{x.data(), 2, xs, nullptr, KAMP_FP32, KAMP_HOST, 1};
  const kamp_tensor ty{y.data(), 2, ys, nullptr, KAMP_FP32, KAMP_HOST, 1};
  REQUIRE(kamp_session_predict(s, &tx, &ty) == KAMP_OK);
  return y;
}

void train_contiguous(kamp_session* s, int steps) {
  for (int k = 0; k < steps; ++k) {
    std::vector<float> x(batch * in), y(batch * out);
    for (int r = 0; r < batch; ++r) {
      for (int j = 0; j < in; ++j) x[r * in + j] = x_at(k, r, j);
      for (int j = 0; j < out; ++j) y[r * out + j] = y_at(k, r, j);
    }
    const std::int64_t xs[] = {batch, in}, ys[] = {batch, out};
    const kamp_tensor tx{x.data(), 2, xs, nullptr, KAMP_FP32, KAMP_HOST, 0};
    const kamp_tensor ty{y.data(), 2, ys, nullptr, KAMP_FP32, KAMP_HOST, 0};
    REQUIRE(kamp_session_train_step(s, &tx, &ty) == KAMP_OK);
  }
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("C API: a session trains and predicts bit for bit as the C++ session", "[c_api]") {
  for (const char* precision : {"fp32", "amp_bf16", "amp_fp16", "pure_bf16"}) {
    CAPTURE(precision);
    kamp::session<> cpp(kamp::session_config::parse(config_text(precision)));
    c_session c(config_text(precision));
    using rows = Kokkos::View<float**, Kokkos::LayoutRight>;
    rows x("x", batch, in), y("y", batch, out), p("p", batch, out);
    for (int k = 0; k < 6; ++k) {
      auto hx = Kokkos::create_mirror_view(x);
      auto hy = Kokkos::create_mirror_view(y);
      for (int r = 0; r < batch; ++r) {
        for (int j = 0; j < in; ++j) hx(r, j) = x_at(k, r, j);
        for (int j = 0; j < out; ++j) hy(r, j) = y_at(k, r, j);
      }
      Kokkos::deep_copy(x, hx);
      Kokkos::deep_copy(y, hy);
      cpp.train_step(x, y);
    }
    train_contiguous(c.handle, 6);
    auto hx = Kokkos::create_mirror_view(x);
    for (int r = 0; r < batch; ++r)
      for (int j = 0; j < in; ++j) hx(r, j) = x_at(9, r, j);
    Kokkos::deep_copy(x, hx);
    cpp.predict(x, p);
    const auto hp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p);
    const std::vector<float> expected(hp.data(), hp.data() + batch * out);
    CHECK(same_bits(predictions(c.handle, 9), expected));
    kamp_report r{};
    REQUIRE(kamp_session_report(c.handle, &r) == KAMP_OK);
    const kamp::session_report e = cpp.report();
    CHECK(r.train_steps == 6);
    CHECK(r.optimizer_steps == e.optimizer_steps);
    CHECK(r.skipped_steps == e.skipped_steps);
    CHECK(r.loss == e.loss);
    CHECK(r.loss_scale == e.loss_scale);
    CHECK(r.grad_norm == e.grad_norm);
    double loss = 0;
    REQUIRE(kamp_session_loss(c.handle, &loss) == KAMP_OK);
    CHECK(loss == e.loss);
  }
}

TEST_CASE("C API: arrays are read where they lie, in every layout and type", "[c_api]") {
  c_session reference(config_text("fp32"));
  train_contiguous(reference.handle, 4);
  const std::vector<float> expected = predictions(reference.handle, 9);

  // Each case: inputs and labels of step k in one layout; all must train to the same bits.
  struct layout {
    const char* name;
    std::function<void(kamp_session*, int)> step;
  };
  const auto fill2 = [](auto& v, int k, int rows, int cols, std::int64_t rs, std::int64_t cs, std::int64_t base,
                        bool labels) {
    for (int r = 0; r < rows; ++r)
      for (int j = 0; j < cols; ++j) {
        const float value = labels ? y_at(k, r, j) : x_at(k, r, j);
        using E = typename std::decay_t<decltype(v)>::value_type;
        if constexpr (std::is_same_v<E, std::uint16_t>) {  // bf16: the values are exact in it
          std::uint32_t bits;
          std::memcpy(&bits, &value, 4);
          v[base + r * rs + j * cs] = std::uint16_t(bits >> 16);
        } else {
          v[base + r * rs + j * cs] = E(value);
        }
      }
  };
  const std::vector<layout> layouts = {
      {"column-major fp64 (a Fortran (batch, features) array)",
       [&](kamp_session* s, int k) {
         std::vector<double> x(batch * in), y(batch * out);
         fill2(x, k, batch, in, 1, batch, 0, false);
         fill2(y, k, batch, out, 1, batch, 0, true);
         const std::int64_t xs[] = {batch, in}, xt[] = {1, batch}, ys[] = {batch, out}, yt[] = {1, batch};
         const kamp_tensor tx{x.data(), 2, xs, xt, KAMP_FP64, KAMP_HOST, 1},
             ty{y.data(), 2, ys, yt, KAMP_FP64, KAMP_HOST, 1};
         REQUIRE(kamp_session_train_step(s, &tx, &ty) == KAMP_OK);
       }},
      {"batch last (features, batch), bf16 inputs, int32 labels scaled",
       [&](kamp_session* s, int k) {
         std::vector<std::uint16_t> x(batch * in);
         std::vector<double> y(batch * out);
         fill2(x, k, batch, in, 1, batch, 0, false);
         fill2(y, k, batch, out, 1, batch, 0, true);
         const std::int64_t xs[] = {in, batch}, ys[] = {out, batch};
         const kamp_tensor tx{x.data(), 2, xs, nullptr, KAMP_BF16, KAMP_HOST, -1},
             ty{y.data(), 2, ys, nullptr, KAMP_FP64, KAMP_HOST, -1};
         REQUIRE(kamp_session_train_step(s, &tx, &ty) == KAMP_OK);
       }},
      {"rank 3 with two batch dimensions, padded rows",
       [&](kamp_session* s, int k) {
         // (2, 4, features) with each sample's row padded to 5 elements.
         std::vector<float> x(batch * 5, NAN), y(batch * 5, NAN);
         fill2(x, k, batch, in, 5, 1, 0, false);
         fill2(y, k, batch, out, 5, 1, 0, true);
         const std::int64_t xs[] = {2, 4, in}, ys[] = {2, 4, out}, st[] = {20, 5, 1};
         const kamp_tensor tx{x.data(), 3, xs, st, KAMP_FP32, KAMP_HOST, 2},
             ty{y.data(), 3, ys, st, KAMP_FP32, KAMP_HOST, 2};
         REQUIRE(kamp_session_train_step(s, &tx, &ty) == KAMP_OK);
       }},
      {"features split over two dimensions that do not merge",
       [&](kamp_session* s, int k) {
         // inputs (batch, 1, 3) with the feature dimension stepping 2 and the batch 7.
         std::vector<float> x(batch * 7, NAN);
         std::vector<float> y(batch * out);
         fill2(x, k, batch, in, 7, 2, 1, false);
         fill2(y, k, batch, out, out, 1, 0, true);
         const std::int64_t xs[] = {batch, 1, in}, xt[] = {7, 100, 2}, ys[] = {batch, out};
         const kamp_tensor tx{x.data() + 1, 3, xs, xt, KAMP_FP32, KAMP_HOST, 1},
             ty{y.data(), 2, ys, nullptr, KAMP_FP32, KAMP_HOST, 1};
         REQUIRE(kamp_session_train_step(s, &tx, &ty) == KAMP_OK);
       }},
      {"DLPack: a column-major fp64 DLTensor",
       [&](kamp_session* s, int k) {
         std::vector<double> x(batch * in), y(batch * out);
         fill2(x, k, batch, in, 1, batch, 0, false);
         fill2(y, k, batch, out, 1, batch, 0, true);
         std::int64_t xs[] = {batch, in}, xt[] = {1, batch}, ys[] = {batch, out}, yt[] = {1, batch};
         DLTensor dx{x.data(), {kDLCPU, 0}, 2, {kDLFloat, 64, 1}, xs, xt, 0};
         DLTensor dy{y.data(), {kDLCPU, 0}, 2, {kDLFloat, 64, 1}, ys, yt, 0};
         kamp_tensor tx, ty;
         REQUIRE(kamp_tensor_from_dlpack(&dx, 1, &tx) == KAMP_OK);
         REQUIRE(kamp_tensor_from_dlpack(&dy, 1, &ty) == KAMP_OK);
         REQUIRE(kamp_session_train_step(s, &tx, &ty) == KAMP_OK);
       }},
  };
  for (const layout& l : layouts) {
    CAPTURE(l.name);
    c_session s(config_text("fp32"));
    for (int k = 0; k < 4; ++k) l.step(s.handle, k);
    CHECK(same_bits(predictions(s.handle, 9), expected));
  }

  SECTION("outputs in fp64 column-major, bf16 and reversed rows") {
    std::vector<float> x(batch * in);
    for (int r = 0; r < batch; ++r)
      for (int j = 0; j < in; ++j) x[r * in + j] = x_at(9, r, j);
    const std::int64_t xs[] = {batch, in}, ys[] = {batch, out};
    const kamp_tensor tx{x.data(), 2, xs, nullptr, KAMP_FP32, KAMP_HOST, 1};
    std::vector<double> y64(batch * out);
    const std::int64_t cm[] = {1, batch};
    const kamp_tensor t64{y64.data(), 2, ys, cm, KAMP_FP64, KAMP_HOST, 1};
    REQUIRE(kamp_session_predict(reference.handle, &tx, &t64) == KAMP_OK);
    std::vector<std::uint16_t> y16(batch * out);
    const kamp_tensor t16{y16.data(), 2, ys, nullptr, KAMP_BF16, KAMP_HOST, 1};
    REQUIRE(kamp_session_predict(reference.handle, &tx, &t16) == KAMP_OK);
    std::vector<float> reversed(batch * out);
    const std::int64_t back[] = {-out, 1};
    const kamp_tensor tr{reversed.data() + (batch - 1) * out, 2, ys, back, KAMP_FP32, KAMP_HOST, 1};
    REQUIRE(kamp_session_predict(reference.handle, &tx, &tr) == KAMP_OK);
    for (int r = 0; r < batch; ++r)
      for (int j = 0; j < out; ++j) {
        const float e = expected[r * out + j];
        CHECK(y64[j * batch + r] == double(e));
        const std::uint32_t bits = std::uint32_t(y16[r * out + j]) << 16;
        float b;
        std::memcpy(&b, &bits, 4);
        CHECK(std::fabs(b - e) <= std::ldexp(std::fabs(e), -8));  // within half a bf16 ulp
        CHECK(reversed[(batch - 1 - r) * out + j] == e);
      }
  }
}

TEST_CASE("C API: bad input is a status and a message, the session unchanged", "[c_api]") {
  c_session s(config_text("fp32"));
  train_contiguous(s.handle, 2);
  const std::vector<float> before = predictions(s.handle, 9);
  std::vector<float> x(batch * in, 0.5f), y(batch * out, 0.5f);
  std::int64_t xs[] = {batch, in}, ys[] = {batch, out};
  const kamp_tensor tx{x.data(), 2, xs, nullptr, KAMP_FP32, KAMP_HOST, 1};
  const kamp_tensor ty{y.data(), 2, ys, nullptr, KAMP_FP32, KAMP_HOST, 1};

  const auto fails = [](kamp_status got, kamp_status want, const char* words) {
    CHECK(got == want);
    const std::string message = kamp_last_error();
    CAPTURE(message);
    CHECK(message.find(words) != std::string::npos);
  };
  fails(kamp_session_train_step(nullptr, &tx, &ty), KAMP_ERROR_INVALID_HANDLE, "NULL");
  {
    kamp_session* gone = nullptr;
    REQUIRE(kamp_session_create_from_text(&gone, config_text("fp32").c_str(), nullptr) == KAMP_OK);
    kamp_session* copy = gone;
    REQUIRE(kamp_session_destroy(&gone) == KAMP_OK);
    CHECK(gone == nullptr);
    fails(kamp_session_train_step(copy, &tx, &ty), KAMP_ERROR_INVALID_HANDLE, "not a live session");
    fails(kamp_session_destroy(&copy), KAMP_ERROR_INVALID_HANDLE, "destroyed twice");
    kamp_session* null_handle = nullptr;
    CHECK(kamp_session_destroy(&null_handle) == KAMP_OK);
  }
  fails(kamp_session_train_step(s.handle, nullptr, &ty), KAMP_ERROR_INVALID_ARGUMENT, "inputs is NULL");
  {
    const std::int64_t wrong[] = {batch, 4};
    const kamp_tensor t{x.data(), 2, wrong, nullptr, KAMP_FP32, KAMP_HOST, 1};
    fails(kamp_session_train_step(s.handle, &t, &ty), KAMP_ERROR_INVALID_ARGUMENT, "4 features per sample");
  }
  {
    const std::int64_t fewer[] = {batch - 1, out};
    const kamp_tensor t{y.data(), 2, fewer, nullptr, KAMP_FP32, KAMP_HOST, 1};
    fails(kamp_session_train_step(s.handle, &tx, &t), KAMP_ERROR_INVALID_ARGUMENT, "rows but labels");
  }
  {
    kamp_tensor t = tx;
    t.dtype = 9;
    fails(kamp_session_train_step(s.handle, &t, &ty), KAMP_ERROR_INVALID_ARGUMENT, "dtype 9");
    t = tx;
    t.rank = 9;
    fails(kamp_session_train_step(s.handle, &t, &ty), KAMP_ERROR_INVALID_ARGUMENT, "rank 9");
    t = tx;
    t.batch_dims = 3;
    fails(kamp_session_train_step(s.handle, &t, &ty), KAMP_ERROR_INVALID_ARGUMENT, "batch_dims 3");
    t = tx;
    t.data = nullptr;
    fails(kamp_session_train_step(s.handle, &t, &ty), KAMP_ERROR_INVALID_ARGUMENT, "null data pointer");
    t = tx;
    t.data = reinterpret_cast<char*>(x.data()) + 1;
    fails(kamp_session_train_step(s.handle, &t, &ty), KAMP_ERROR_INVALID_ARGUMENT, "not a multiple of 4 bytes");
    const std::int64_t zero[] = {0, in};
    t = tx;
    t.shape = zero;
    fails(kamp_session_train_step(s.handle, &t, &ty), KAMP_ERROR_INVALID_ARGUMENT, "extent 0");
  }
#if !defined(KOKKOS_ENABLE_CUDA) && !defined(KOKKOS_ENABLE_HIP)
  {
    kamp_tensor t = tx;
    t.device = KAMP_CUDA;
    fails(kamp_session_train_step(s.handle, &t, &ty), KAMP_ERROR_UNSUPPORTED, "CUDA memory");
    kamp_session_options options{0, 0, &t};
    kamp_session* other = nullptr;
    fails(kamp_session_create_from_text(&other, config_text("fp32").c_str(), &options), KAMP_ERROR_UNSUPPORTED,
          "a stream was given");
    CHECK(other == nullptr);
  }
#endif
  {
    std::vector<std::int32_t> ints(batch * out);
    const kamp_tensor t{ints.data(), 2, ys, nullptr, KAMP_INT32, KAMP_HOST, 1};
    fails(kamp_session_predict(s.handle, &tx, &t), KAMP_ERROR_INVALID_ARGUMENT, "outputs are fp64");
    const std::int64_t broadcast[] = {0, 1};
    const kamp_tensor b{y.data(), 2, ys, broadcast, KAMP_FP32, KAMP_HOST, 1};
    fails(kamp_session_predict(s.handle, &tx, &b), KAMP_ERROR_INVALID_ARGUMENT, "one address per element");
  }
  {
    kamp_session* other = nullptr;
    fails(kamp_session_create_from_text(&other, (config_text("fp32") + "\nlearning_rat: 1").c_str(), nullptr),
          KAMP_ERROR_CONFIG, "learning_rat");
    CHECK(other == nullptr);
    fails(kamp_session_create(&other, "/nonexistent/kamp.yaml", nullptr), KAMP_ERROR_CONFIG, "/nonexistent/kamp.yaml");
    kamp_session_options mpi{1, 0, nullptr};
    CHECK(kamp_session_create_from_text(&other, config_text("fp32").c_str(), &mpi) != KAMP_OK);
    CHECK(other == nullptr);
  }
  fails(kamp_session_save(s.handle, std::filesystem::temp_directory_path().c_str()), KAMP_ERROR_IO, "directory");
  fails(kamp_session_load(s.handle, "/nonexistent/kamp.h5"), KAMP_ERROR_IO, "/nonexistent/kamp.h5");
  {
    // A FIFO is refused by name, not opened (HDF5 would wait for a writer forever).
    const std::string fifo = (std::filesystem::temp_directory_path() / "kamp_test_c_api.fifo").string();
    std::filesystem::remove(fifo);
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    fails(kamp_session_load(s.handle, fifo.c_str()), KAMP_ERROR_IO, "is a FIFO");
    fails(kamp_session_load(s.handle, std::filesystem::temp_directory_path().c_str()), KAMP_ERROR_IO, "directory");
    std::filesystem::remove(fifo);
  }
  {
    DLTensor complex{x.data(), {kDLCPU, 0}, 2, {kDLComplex, 64, 1}, xs, nullptr, 0};
    kamp_tensor t;
    fails(kamp_tensor_from_dlpack(&complex, 1, &t), KAMP_ERROR_INVALID_ARGUMENT,
          "a dtype or device kamp does not read");
  }
  // The failures left no trace: the same predictions, the same counters.
  CHECK(same_bits(predictions(s.handle, 9), before));
  kamp_report r{};
  REQUIRE(kamp_session_report(s.handle, &r) == KAMP_OK);
  CHECK(r.train_steps == 2);
  CHECK(std::string(kamp_last_error()).empty());
}

TEST_CASE("C API: save, load into a new session, and the version", "[c_api]") {
  const std::string path = (std::filesystem::temp_directory_path() / "kamp_test_c_api.h5").string();
  c_session a(config_text("amp_fp16"));
  train_contiguous(a.handle, 5);
  REQUIRE(kamp_session_save(a.handle, path.c_str()) == KAMP_OK);
  c_session b(config_text("amp_fp16"));
  REQUIRE(kamp_session_load(b.handle, path.c_str()) == KAMP_OK);
  CHECK(same_bits(predictions(b.handle, 9), predictions(a.handle, 9)));
  // Training on from the file continues as the saved session does.
  train_contiguous(a.handle, 2);
  train_contiguous(b.handle, 2);
  CHECK(same_bits(predictions(b.handle, 9), predictions(a.handle, 9)));
  c_session other(config_text("fp32"));
  const std::vector<float> before = predictions(other.handle, 9);
  CHECK(kamp_session_load(other.handle, path.c_str()) == KAMP_ERROR_IO);
  CHECK(std::string(kamp_last_error()).find("same config") != std::string::npos);
  CHECK(same_bits(predictions(other.handle, 9), before));
  std::filesystem::remove(path);

  int32_t major = -1, minor = -1, patch = -1;
  kamp_version(&major, &minor, &patch);
  CHECK(major == KAMP_VERSION_MAJOR);
  CHECK(minor == KAMP_VERSION_MINOR);
  CHECK(patch == KAMP_VERSION_PATCH);
  CHECK(std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch) == KAMP_TEST_PROJECT_VERSION);
}

// Last in the file: in one process (without test discovery) nothing may follow it.
TEST_CASE("C API: kamp_finalize ends kamp in the process, and a later create says so", "[c_api]") {
  c_session s(config_text("fp32"));
  kamp_session* alive = s.handle;
  REQUIRE(kamp_finalize() == KAMP_OK);
  // The session it destroyed is no longer a handle kamp knows.
  CHECK(kamp_session_train_step(alive, nullptr, nullptr) == KAMP_ERROR_INVALID_HANDLE);
  s.handle = nullptr;
  kamp_session* later = nullptr;
  const kamp_status status = kamp_session_create_from_text(&later, config_text("fp32").c_str(), nullptr);
  if (status == KAMP_OK) {
    // kamp built against a shared Kokkos library (sid's) shares this program's Kokkos, which
    // kamp neither started nor ends: it is still running and sessions still work.
    CHECK(Kokkos::is_initialized());
    CHECK(kamp_session_destroy(&later) == KAMP_OK);
  } else {
    // kamp's own (static) Kokkos ended with kamp_finalize and cannot start again.
    CHECK(status == KAMP_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(kamp_last_error()).find("kamp_finalize was called") != std::string::npos);
    CHECK(later == nullptr);
  }
  CHECK(kamp_finalize() == KAMP_OK);  // twice: nothing left to do
}
