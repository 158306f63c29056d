-- title: Accelerators by ridge point
-- Dense bf16 FLOP/s over HBM bandwidth: decode below the ridge is bandwidth-bound.
SELECT id, name, memory_gib, hbm_tbytes_per_s, bf16_dense_tflops,
       round(ridge_flop_per_byte, 1) AS ridge_flop_per_byte
FROM accelerators
ORDER BY ridge_flop_per_byte DESC
