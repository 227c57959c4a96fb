#ifndef KAMP_KAMP_HPP
#define KAMP_KAMP_HPP

#include <kamp/config.hpp>
#include <kamp/kernels.hpp>
#include <kamp/numeric.hpp>

#endif
