-- title: KV-cache bytes per token of each model
-- Parameters (total and active) and the bf16 KV cache one token of context costs.
SELECT id, attention, round(params_total / 1e9, 2) AS params_b,
       round(params_active / 1e9, 2) AS active_b,
       round(kv_bytes_per_token / 1024, 1) AS kv_kib_per_token
FROM models
ORDER BY params_total
