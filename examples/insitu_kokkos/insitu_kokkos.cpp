// A Kokkos science code training a surrogate in-situ with kamp: examples/insitu_fortran's solver
// (2-D diffusion with a Gray-Scott reaction term, whose rates the MLP learns) on device views in
// LayoutLeft, as a code would keep them on a GPU. The session reads the solver's fields where
// they lie (the interior of state(x, y, species) is a strided subview; nothing is copied), and
// the criteria are the Fortran example's.
#include <kamp/kamp.hpp>
#include <kamp/model/training/session.hpp>

#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

namespace {

using field = Kokkos::View<double***, Kokkos::LayoutLeft>;  // (x, y, species), halo of 1 in x and y
constexpr int nx = 32, ny = 32, steps = 1200, every = 2, ahead = 10;
constexpr double du = 0.16, dv = 0.08, feed = 0.025, kill = 0.055, dt = 1.0;
constexpr double rate_unit = 0.02;  // rates kept in units of their size: the network's targets are O(1)

auto interior(const field& s) {
  return Kokkos::subview(s, std::make_pair(1, nx + 1), std::make_pair(1, ny + 1), Kokkos::ALL);
}

void initial_state(const field& s) {
  Kokkos::parallel_for(
      "insitu::initial", Kokkos::MDRangePolicy<Kokkos::Rank<2>>({1, 1}, {nx + 1, ny + 1}), KOKKOS_LAMBDA(int i, int j) {
        const int centres[3][2] = {{8, 9}, {22, 14}, {13, 25}};
        s(i, j, 0) = 1;
        s(i, j, 1) = 0;
        for (const auto& c : centres)
          if (abs(i - c[0]) <= 3 && abs(j - c[1]) <= 3) {
            s(i, j, 0) = 0.5 + 0.02 * sin(0.7 * i + 1.3 * j);
            s(i, j, 1) = 0.25 + 0.02 * cos(1.1 * i - 0.9 * j);
          }
      });
}

void periodic_halos(const field& s) {
  Kokkos::parallel_for(
      "insitu::halo_x", Kokkos::MDRangePolicy<Kokkos::Rank<2>>({0, 0}, {ny + 2, 2}), KOKKOS_LAMBDA(int j, int c) {
        s(0, j, c) = s(nx, j, c);
        s(nx + 1, j, c) = s(1, j, c);
      });
  Kokkos::parallel_for(
      "insitu::halo_y", Kokkos::MDRangePolicy<Kokkos::Rank<2>>({0, 0}, {nx + 2, 2}), KOKKOS_LAMBDA(int i, int c) {
        s(i, 0, c) = s(i, ny, c);
        s(i, ny + 1, c) = s(i, 1, c);
      });
}

// The reaction term, in rate units: what the surrogate learns.
void reaction(const field& s, const field& r) {
  Kokkos::parallel_for(
      "insitu::reaction", Kokkos::MDRangePolicy<Kokkos::Rank<2>>({0, 0}, {nx, ny}), KOKKOS_LAMBDA(int i, int j) {
        const double u = s(i + 1, j + 1, 0), v = s(i + 1, j + 1, 1);
        r(i, j, 0) = (-u * v * v + feed * (1 - u)) / rate_unit;
        r(i, j, 1) = (u * v * v - (feed + kill) * v) / rate_unit;
      });
}

// One explicit step of diffusion plus the rates r (halos already filled).
template <class Rates>
void advance(const field& s, const field& next, const Rates& r) {
  Kokkos::parallel_for(
      "insitu::advance", Kokkos::MDRangePolicy<Kokkos::Rank<3>>({1, 1, 0}, {nx + 1, ny + 1, 2}),
      KOKKOS_LAMBDA(int i, int j, int c) {
        const double lap = s(i - 1, j, c) + s(i + 1, j, c) + s(i, j - 1, c) + s(i, j + 1, c) - 4 * s(i, j, c);
        next(i, j, c) = s(i, j, c) + dt * ((c == 0 ? du : dv) * lap + rate_unit * double(r(i - 1, j - 1, c)));
      });
  Kokkos::deep_copy(interior(s), interior(next));
}

double rms_difference(const field& a, const field& b) {
  double sum = 0;
  Kokkos::parallel_reduce(
      "insitu::rms", Kokkos::MDRangePolicy<Kokkos::Rank<3>>({1, 1, 0}, {nx + 1, ny + 1, 2}),
      KOKKOS_LAMBDA(int i, int j, int c, double& acc) {
        const double d = a(i, j, c) - (b.data() ? b(i, j, c) : 0.0);
        acc += d * d;
      },
      sum);
  return std::sqrt(sum / (2.0 * nx * ny));
}

}  // namespace

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  kamp::session<> surrogate(kamp::session_config::parse(
      "model: {type: mlp, parameters: {layer_sizes: [2, 32, 32, 2], activation: tanh}}\n"
      "optimizer: {type: adam, parameters: {learning_rate: 3.0e-3}}\n"
      "lr_scheduler: {type: cosine_annealing, parameters: {T_max: 600, eta_min: 1.0e-5}}\nprecision: fp32"));
  field state("state", nx + 2, ny + 2, 2), scratch("scratch", nx + 2, ny + 2, 2), rates("rates", nx, ny, 2);
  initial_state(state);
  std::vector<double> losses;
  for (int step = 1; step <= steps; ++step) {
    periodic_halos(state);
    reaction(state, rates);
    if (step % every == 0) {
      // Every point (x, y) is a sample, the two species its features: batch_dims = 2.
      surrogate.train_step(kamp::as_tensor(interior(state), 2), kamp::as_tensor(rates, 2));
      double loss;
      Kokkos::deep_copy(loss, surrogate.loss());
      losses.push_back(loss);
    }
    advance(state, scratch, rates);
  }

  // Ten steps ahead: on the solver's own rates, on the surrogate's (fp32), and on none.
  field exact("exact", nx + 2, ny + 2, 2), learned("learned", nx + 2, ny + 2, 2),
      diffused("diffused", nx + 2, ny + 2, 2);
  for (const field& f : {exact, learned, diffused}) Kokkos::deep_copy(f, state);
  Kokkos::View<float***, Kokkos::LayoutLeft> predicted("predicted", nx, ny, 2);
  const field none("none", nx, ny, 2);
  for (int k = 0; k < ahead; ++k) {
    periodic_halos(exact);
    reaction(exact, rates);
    advance(exact, scratch, rates);
    periodic_halos(learned);
    surrogate.predict(kamp::as_tensor(interior(learned), 2), kamp::as_tensor(predicted, 2));
    advance(learned, scratch, predicted);
    periodic_halos(diffused);
    advance(diffused, scratch, none);
  }
  const double error = rms_difference(learned, exact), baseline = rms_difference(diffused, exact),
               field_rms = rms_difference(exact, field());
  double first = 0, last = 0;
  for (int i = 0; i < 10; ++i) first += losses[i] / 10, last += losses[losses.size() - 1 - i] / 10;
  std::printf("in-situ surrogate on %s, %zu train steps\n  loss: first 10 %.3e, last 10 %.3e, fell by a factor %.1f\n",
              Kokkos::DefaultExecutionSpace::name(), losses.size(), first, last, first / last);
  std::printf("  field %d steps ahead: rms error %.3e (field rms %.3e, error without the reaction %.3e)\n", ahead,
              error, field_rms, baseline);
  const bool passed = first / last >= 50 && error <= 0.02 * field_rms && error <= 0.25 * baseline;
  std::printf("%s\n", passed ? "passed"
                             : "FAILED: the loss fell less than 50x, or the error is over 2 % of the field "
                               "or over 1/4 of the error without the reaction");
  return passed ? 0 : 1;
}
