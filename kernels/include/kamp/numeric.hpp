#ifndef KAMP_NUMERIC_HPP
#define KAMP_NUMERIC_HPP

#include <kamp/numeric/accum_type.hpp>
#include <kamp/numeric/convert.hpp>
#include <kamp/numeric/counter_random.hpp>
#include <kamp/numeric/dtype.hpp>
#include <kamp/numeric/element_access.hpp>
#include <kamp/numeric/format.hpp>

#endif
