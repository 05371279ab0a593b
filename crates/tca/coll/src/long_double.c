/* C long double arithmetic for TCA_LONG_DOUBLE reductions (Rust has no long double).
 * Values are 16-byte slots holding a long double; the bytes past the value's significant
 * bytes (x87's 80-bit format leaves 6 bytes of padding) are written as zero, so that every
 * rank's result is the same bit for bit. */
#include <float.h>
#include <stddef.h>
#include <string.h>

#if LDBL_MANT_DIG == 64
#define LD_BYTES 10 /* x87 extended precision: 64-bit significand, 15-bit exponent, sign */
#else
#define LD_BYTES sizeof(long double)
#endif

_Static_assert(sizeof(long double) <= 16, "long double fits the 16-byte TCA_LONG_DOUBLE slot");

static long double load(const unsigned char *p) {
    long double v = 0;
    memcpy(&v, p, LD_BYTES);
    return v;
}

static void store(unsigned char *p, long double v) {
    memset(p, 0, 16);
    memcpy(p, &v, LD_BYTES);
}

/* acc[i] = acc[i] OP other[i] for count values; op as tcaOp (SUM PROD MAX MIN, LAND LOR LXOR
 * as C's logical operators giving 1 or 0). Returns 0, or -1 for an operator it does not do. */
int tca_coll_long_double(int op, unsigned char *acc, const unsigned char *other, size_t count) {
    for (size_t i = 0; i < count; i++) {
        long double a = load(acc + 16 * i), b = load(other + 16 * i), r;
        switch (op) {
        case 0: r = a + b; break;
        case 1: r = a * b; break;
        case 2: r = b > a ? b : a; break;
        case 3: r = b < a ? b : a; break;
        case 5: r = (a != 0) && (b != 0); break;
        case 7: r = (a != 0) || (b != 0); break;
        case 9: r = (a != 0) != (b != 0); break;
        default: return -1;
        }
        store(acc + 16 * i, r);
    }
    return 0;
}

/* The long double nearest x, in a 16-byte slot. */
void tca_coll_long_double_from_f64(double x, unsigned char *out) { store(out, (long double)x); }

/* The double nearest the long double in a 16-byte slot. */
double tca_coll_long_double_to_f64(const unsigned char *in) { return (double)load(in); }
