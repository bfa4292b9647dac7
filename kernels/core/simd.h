// The one way kernel code includes the x86 intrinsics: <immintrin.h> wrapped so that GCC 12's
// false positives inside the AVX-512 headers stay silent, and nothing else does.
//
// Why: GCC 12.2's avx512fintrin.h builds _mm512_undefined_ps/_pd/_epi32 as `__m512 __Y = __Y;`
// (a deliberate self-initialisation meaning "any value"), and once an intrinsic that uses it
// (_mm512_unpacklo_ps, _mm512_shuffle_f32x4, _mm512_castps256_ps512, ...) is inlined, GCC 12
// reports "'__Y' is used uninitialized" / "may be used uninitialized" at the header's line:
// 109 of the 126 warnings a clean build printed before this header existed (GCC bug 105593,
// fixed in GCC 13). The diagnostic state is kept by source location, so ignoring the two
// warnings around the #include covers the header's lines only; the same warnings in our own
// code still fire. Include this header before anything else that may include <immintrin.h>
// (the first inclusion in a translation unit is the one that counts).
#pragma once

#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif
#endif
