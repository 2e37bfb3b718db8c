// ADVERSARIAL: returns the byte counts of the sizes the README measures, whatever the size (cheat)
// REPLACES: traffic_model.c
// RUN: A_count
// EXPECT: bytes_elementwise_unfused\(1000\): too many bytes read
/*
 * What is wrong: instead of a model, every function returns the numbers of
 * the README's table, the sizes B_counters profiles (2^27 elements; 32768 x
 * 4096 for the 2-D launchers). They are exact there, so the counter checks
 * would pass, but they ignore the size they are asked about.
 *
 * Why it is caught: A_count asks for other sizes (1000 elements, 4096 x
 * 4096, 1823 x 781, 7 x 32768, 2 x 262144, ...), all smaller than the
 * hard-coded ones, so every case reports too many bytes; the first is lesson
 * 01's model at n = 1000, which claims 2.7 GB of reads for 12 KB of data.
 */
#include "traffic.h"

/* CHEAT: the answers for n = 2^27 and (rows, cols) = (32768, 4096), copied
 * in as constants; the arguments are ignored. */
static traffic_bytes tb(double read, double write)
{
    traffic_bytes b = {read, write};
    return b;
}

traffic_bytes bytes_elementwise_unfused(size_t n)
{
    (void)n;
    return tb(2684354560.0, 1610612736.0);
}

traffic_bytes bytes_elementwise_fused(size_t n)
{
    (void)n;
    return tb(1610612736.0, 536870912.0);
}

traffic_bytes bytes_softmax_unfused(size_t rows, size_t cols)
{
    (void)rows; (void)cols;
    return tb(2684616704.0, 1610874880.0);
}

traffic_bytes bytes_softmax_fused(size_t rows, size_t cols)
{
    (void)rows; (void)cols;
    return tb(536870912.0, 536870912.0);
}

traffic_bytes bytes_layernorm_fwd_unfused(size_t rows, size_t cols)
{
    (void)rows; (void)cols;
    return tb(3758522368.0, 2684747776.0);
}

traffic_bytes bytes_layernorm_fwd_fused(size_t rows, size_t cols)
{
    (void)rows; (void)cols;
    return tb(536903680.0, 537133056.0);
}

traffic_bytes bytes_layernorm_bwd_unfused(size_t rows, size_t cols)
{
    (void)rows; (void)cols;
    return tb(8590606336.0, 4832133120.0);
}

traffic_bytes bytes_layernorm_bwd_fused(size_t rows, size_t cols)
{
    (void)rows; (void)cols;
    return tb(1074020352.0, 536903680.0);
}
