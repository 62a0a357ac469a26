-- 0012: seed the price dimensions of SPEC §5.1 (migration 0011) with the public list values.
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py. A price change ships as
-- a new migration or as an operator row (`ingestd pricing set/load`).
-- Source: Anthropic's published pricing (platform.claude.com/docs/en/about-claude/pricing), checked
-- 2026-11-30 like the 0003 seed. Each row is a full price as of its effective date (base rate
-- unchanged from 0003, plus the dimension), so earlier usage keeps the earlier row:
--   web search server tool: $10 per 1,000 searches ($0.01 per request), from the tool's API launch
--     (2025-05-07), on the output row of every seeded model (where a message's requests are counted);
--     web fetch has no fee;
--   long context: Sonnet 4 / 4.5 with the 1M-context beta, a prompt over 200,000 tokens (input +
--     cache read + both cache writes) prices every bucket at the premium rates: input $6, output
--     $22.50, cache read $0.60, cache write 5m $7.50, 1h $12 (2x input and cache, 1.5x output); from
--     the beta's launch (2025-08-12) for Sonnet 4 and from release (2025-09-29) for Sonnet 4.5;
--   fast mode (`usage.speed: "fast"`): Opus 4.6, 6x every rate, from the model's release (2026-02-05).
-- No long-context tier is seeded for other models: their usage over 200K is priced at the row's rates.
INSERT INTO model_pricing (model, bucket, usd_per_mtok, effective_from, source, verified_at,
                           long_context_threshold, long_context_usd_per_mtok, speed_multipliers,
                           web_search_usd_per_request) VALUES
    ('claude-3-5-haiku-20241022', 'output', 4, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-3-5-sonnet-20241022', 'output', 15, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-3-7-sonnet-20250219', 'output', 15, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-haiku-4-5-20251001', 'output', 5, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-opus-4-1-20250805', 'output', 75, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-opus-4-20250514', 'output', 75, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-opus-4-5-20251101', 'output', 25, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-opus-4-6', 'output', 25, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-opus-4-7', 'output', 25, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-sonnet-4-20250514', 'output', 15, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-sonnet-4-5-20250929', 'output', 15, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-sonnet-4-6', 'output', 15, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-sonnet-4-20250514', 'input', 3, '2025-08-12T00:00:00.000Z', 'anthropic long context pricing, prompts over 200K tokens (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', 200000, 6, NULL, NULL),
    ('claude-sonnet-4-20250514', 'output', 15, '2025-08-12T00:00:00.000Z', 'anthropic long context pricing, prompts over 200K tokens (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', 200000, 22.5, NULL, 0.01),
    ('claude-sonnet-4-20250514', 'cache_read', 0.3, '2025-08-12T00:00:00.000Z', 'anthropic long context pricing, prompts over 200K tokens (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', 200000, 0.6, NULL, NULL),
    ('claude-sonnet-4-20250514', 'cache_write_5m', 3.75, '2025-08-12T00:00:00.000Z', 'anthropic long context pricing, prompts over 200K tokens (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', 200000, 7.5, NULL, NULL),
    ('claude-sonnet-4-20250514', 'cache_write_1h', 6, '2025-08-12T00:00:00.000Z', 'anthropic long context pricing, prompts over 200K tokens (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', 200000, 12, NULL, NULL),
    ('claude-sonnet-4-5-20250929', 'input', 3, '2025-09-29T00:00:00.000Z', 'anthropic long context pricing, prompts over 200K tokens (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', 200000, 6, NULL, NULL),
    ('claude-sonnet-4-5-20250929', 'output', 15, '2025-09-29T00:00:00.000Z', 'anthropic long context pricing, prompts over 200K tokens (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', 200000, 22.5, NULL, 0.01),
    ('claude-sonnet-4-5-20250929', 'cache_read', 0.3, '2025-09-29T00:00:00.000Z', 'anthropic long context pricing, prompts over 200K tokens (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', 200000, 0.6, NULL, NULL),
    ('claude-sonnet-4-5-20250929', 'cache_write_5m', 3.75, '2025-09-29T00:00:00.000Z', 'anthropic long context pricing, prompts over 200K tokens (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', 200000, 7.5, NULL, NULL),
    ('claude-sonnet-4-5-20250929', 'cache_write_1h', 6, '2025-09-29T00:00:00.000Z', 'anthropic long context pricing, prompts over 200K tokens (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', 200000, 12, NULL, NULL),
    ('claude-opus-4-6', 'input', 5, '2026-02-05T00:00:00.000Z', 'anthropic fast mode for Opus 4.6: 6x standard rates (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, '{"fast": 6}', NULL),
    ('claude-opus-4-6', 'output', 25, '2026-02-05T00:00:00.000Z', 'anthropic fast mode for Opus 4.6: 6x standard rates (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, '{"fast": 6}', 0.01),
    ('claude-opus-4-6', 'cache_read', 0.5, '2026-02-05T00:00:00.000Z', 'anthropic fast mode for Opus 4.6: 6x standard rates (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, '{"fast": 6}', NULL),
    ('claude-opus-4-6', 'cache_write_5m', 6.25, '2026-02-05T00:00:00.000Z', 'anthropic fast mode for Opus 4.6: 6x standard rates (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, '{"fast": 6}', NULL),
    ('claude-opus-4-6', 'cache_write_1h', 10, '2026-02-05T00:00:00.000Z', 'anthropic fast mode for Opus 4.6: 6x standard rates (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, '{"fast": 6}', NULL);
