/* kamp from C: create a session, train it, save it, load it into a second one and predict.
 * The network learns y = sin(x0) * cos(x1) from column-major (Fortran-ordered) double arrays,
 * used where they lie. Passes when the loss falls 20x, the error on points never trained on is
 * below 1e-3 (seen: 4e-5) and the loaded session predicts the same bits as the one that saved it. */
#include <kamp.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                  \
  do {                                                               \
    if ((call) != KAMP_OK) {                                         \
      fprintf(stderr, "c_minimal: %s\n", kamp_last_error());         \
      return 1;                                                      \
    }                                                                \
  } while (0)

enum { batch = 256, steps = 1500 };

/* Sample k's inputs in column-major order (x[i + j * batch]) and its labels. */
static void sample(int k, double* x, double* y) {
  for (int i = 0; i < batch; ++i) {
    const unsigned h = (unsigned)(k * batch + i) * 2654435761u;
    x[i] = 3.0 * ((h >> 8) & 0xffff) / 65536.0 - 1.5;
    x[i + batch] = 3.0 * ((h >> 16) & 0xffff) / 65536.0 - 1.5;
    y[i] = sin(x[i]) * cos(x[i + batch]);
  }
}

int main(int argc, char** argv) {
  const char* checkpoint = argc > 1 ? argv[1] : "c_minimal.h5";
  const char* config =
      "model: {type: mlp, parameters: {layer_sizes: [2, 32, 32, 1], activation: tanh}}\n"
      "optimizer: {type: adam, parameters: {learning_rate: 3.0e-3}}\n"
      "precision: amp_bf16\n";
  double x[2 * batch], y[batch];
  float prediction[2][batch];
  const int64_t x_shape[2] = {batch, 2}, x_strides[2] = {1, batch}; /* column-major */
  const int64_t y_shape[2] = {batch, 1};
  kamp_tensor inputs = {x, 2, x_shape, x_strides, KAMP_FP64, KAMP_HOST, 1};
  kamp_tensor labels = {y, 2, y_shape, NULL, KAMP_FP64, KAMP_HOST, 1};
  kamp_session *trained = NULL, *loaded = NULL;
  double first = 0, last = 0, loss;
  int32_t major, minor, patch;

  kamp_version(&major, &minor, &patch);
  printf("kamp %d.%d.%d (header %s)\n", major, minor, patch, KAMP_VERSION_STRING);
  CHECK(kamp_session_create_from_text(&trained, config, NULL));
  for (int k = 0; k < steps; ++k) {
    sample(k, x, y);
    CHECK(kamp_session_train_step(trained, &inputs, &labels));
    if (k < 20 || k >= steps - 20) {
      CHECK(kamp_session_loss(trained, &loss));
      if (k < 20) first += loss / 20; else last += loss / 20;
    }
  }
  CHECK(kamp_session_save(trained, checkpoint));
  CHECK(kamp_session_create_from_text(&loaded, config, NULL));
  CHECK(kamp_session_load(loaded, checkpoint));

  sample(-1, x, y); /* points never trained on */
  for (int s = 0; s < 2; ++s) {
    kamp_tensor outputs = {prediction[s], 2, y_shape, NULL, KAMP_FP32, KAMP_HOST, 1};
    CHECK(kamp_session_predict(s == 0 ? trained : loaded, &inputs, &outputs));
  }
  double error = 0;
  for (int i = 0; i < batch; ++i) error += pow(prediction[1][i] - y[i], 2) / batch;
  const int same = memcmp(prediction[0], prediction[1], sizeof prediction[0]) == 0;
  printf("loss %.3e -> %.3e (%.0fx); held-out mean squared error %.2e; loaded session predicts the same bits: %s\n",
         first, last, first / last, error, same ? "yes" : "NO");
  CHECK(kamp_session_destroy(&trained));
  CHECK(kamp_session_destroy(&loaded));
  const int passed = same && first / last > 20 && error < 1e-3;
  puts(passed ? "passed" : "FAILED");
  return passed ? 0 : 1;
}
