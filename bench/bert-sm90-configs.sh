# shellcheck shell=bash
# bert-sm90-configs.sh - sourced, not run: the BERT kernels (kernels-bert/) at the configuration
# an untuned BERT library runs them with on sm_90, and the work of one call at BERT-large shapes.
# One list for the benchmarks that walk every BERT kernel (static-report.sh, compile-time.sh).
#
# That configuration is the tune block's first preset (the gemm's tensor_cores, min_blocks = 2;
# the attention kernels' FA2 tiles with dropout on;
# the memory-bound kernels' 1024 elements over 4 warps), else its first point, T=f16 where the
# kernel has an element type, compiled with the promises the library's most specialized copy has
# for the call (docs/library.md: integer arguments equal to 1 compiled in, multiples of 16
# promised; the last column of each entry). The gemm comes a second time on sm_90's wgmma, at the
# configs of its `for cuda` presets wgmma_tc, wgmma_deep, wgmma_deep2, wgmma_half and wgmma_wide (what a GPU's default-mode tuning
# also times), in the three layouts of a linear layer's products, attn_fwd at fa2_wgmma, and
# attn_bwd_dkdv and attn_bwd_dq at their bwd_wgmma and bwd_wgmma_narrow; and once in f32 at its
# default (fma_f32), what BERT fp32 runs.
#
#   BERT-large: batch 8 x 512 tokens (NTOK = 4096), hidden 1024, 16 heads of 64, FFN 4096,
#   335M parameters (the optimizer kernels), a 2-class head (xent).
#
# FLOPs and bytes are the minimum a call must do (each operand read once from HBM, each output
# written once; an atomic counted as a read and a write).
# shellcheck disable=SC2034 # the variables are the sourcing script's

B=8; S=512; HID=1024; HEADS=16; HD=64; FFN=4096; NTOK=$((B * S)); PARAMS=335000000
BHSD=$((B * HEADS * S * HD))         # elements of one of q, k, v, o
SQ=$((B * HEADS * S * S * HD))        # one S x S x D product over all heads

# the promises of the gemm's FFN-up call y = x W^T (W read k-major): M, N, K, the row strides
# multiples of 16, the unit strides and the one part of K (splits = 1) compiled in
gemm_fwd="-D BM=128 -D BN=128 -D BK=32 -D num_warps=8 -D num_stages=3 -D min_blocks=2 \
--multiple-of M=16 --multiple-of N=16 --multiple-of K=16 --multiple-of sam=16 --specialize sak=1 \
--specialize sbk=1 --multiple-of sbn=16 --multiple-of scm=16 --specialize scn=1 --specialize splits=1"
# the gemm on sm_90's wgmma (the `for cuda` presets wgmma_tc and wgmma_deep) in the three layouts
# of a linear layer's products: y = x W^T (B k-major), dX = dY W (B n-major), dW = X^T dY (A m-major)
gemm_sizes="--multiple-of M=16 --multiple-of N=16 --multiple-of K=16 --multiple-of scm=16 --specialize scn=1"
gemm_wg="-D BM=128 -D BN=128 -D BK=32 -D num_warps=8 -D num_stages=3 -D min_blocks=2 -D GROUP_M=8 -D wgmma=1 $gemm_sizes"
gemm_wg_deep="-D BM=128 -D BN=128 -D BK=64 -D num_warps=8 -D num_stages=4 -D GROUP_M=8 -D wgmma=1 $gemm_sizes"
gemm_wg_half="-D BM=64 -D BN=128 -D BK=64 -D num_warps=4 -D num_stages=4 -D min_blocks=2 -D GROUP_M=8 -D wgmma=1 $gemm_sizes"
gemm_wg_wide="-D BM=128 -D BN=256 -D BK=64 -D num_warps=8 -D num_stages=4 -D GROUP_M=8 -D wgmma=1 $gemm_sizes"
gemm_wg_deep2="-D BM=128 -D BN=128 -D BK=64 -D num_warps=8 -D num_stages=3 -D min_blocks=2 -D GROUP_M=8 -D wgmma=1 $gemm_sizes"
# the f32 gemm's default on every device (the preset fma_f32: the FMA path, one block a SM)
gemm_f32="-D BM=128 -D BN=128 -D BK=32 -D num_warps=8 -D num_stages=2 -D min_blocks=1 $gemm_sizes"
# GELU's backward in the dH product's epilogue (EPI 4): its cuda default (the preset gelu_bwd,
# the tensor-core tile at one block per SM) and wgmma_deep
gemm_gelu_bwd="-D BM=128 -D BN=128 -D BK=32 -D num_warps=8 -D num_stages=3 -D min_blocks=1 $gemm_sizes"
# the forward and dX copies compile in one part of K (splits = 1); the dW copy takes any (the
# trainer splits the weight gradients' K: gemm.kiln, model.c linear_dw)
gemm_fwd_layout="--multiple-of sam=16 --specialize sak=1 --specialize sbk=1 --multiple-of sbn=16 --specialize splits=1"
gemm_dx_layout="--multiple-of sam=16 --specialize sak=1 --multiple-of sbk=16 --specialize sbn=1 --specialize splits=1"
gemm_dw_layout="--specialize sam=1 --multiple-of sak=16 --multiple-of sbk=16 --specialize sbn=1"
wide="-D BLOCK=1024 -D num_warps=4"
# the attention kernels' %16 copy: S, the strides and the dropout offset multiples of 16 (the
# fused QKV layout of BERT-large), dropout on as the trainer runs it, at the FA2 tiles of their
# first presets
attn="-D DROPOUT=1 --multiple-of S=16 --multiple-of sb=16 --multiple-of sh=16 --multiple-of ss=16 \
--multiple-of osb=16 --multiple-of osh=16 --multiple-of oss=16 --multiple-of offset=16"
attn_fwd="$attn -D BM=64 -D BN=64 -D num_warps=4 -D num_stages=2"
attn_dkdv="$attn -D BM=32 -D BN=64 -D num_warps=4"
attn_dq="$attn -D BM=64 -D BN=32 -D num_warps=4 -D min_blocks=3"
attn_bwd_wg="$attn -D BM=64 -D BN=64 -D num_warps=4 -D wgmma=1" # both bwd_wgmma presets
attn_dkdv_wg_narrow="$attn -D BM=32 -D BN=64 -D num_warps=4 -D wgmma=1" # bwd_wgmma_narrow
attn_dq_wg_narrow="$attn -D BM=64 -D BN=32 -D num_warps=4 -D wgmma=1"   # bwd_wgmma_narrow
attn_delta="--multiple-of S=16 --multiple-of osb=16 --multiple-of osh=16 --multiple-of oss=16"

# name | file | defines | flops | bytes | tensor(1/0) | shape note | config and promises
kernels=(
  "gemm|gemm.kiln|T=f16 EPI=0|$((2 * NTOK * FFN * HID))|$((2 * (NTOK * HID + HID * FFN + NTOK * FFN)))|1|FFN up: M=$NTOK N=$FFN K=$HID|$gemm_fwd"
  "gemm|gemm.kiln|T=f16 EPI=0|$((2 * NTOK * FFN * HID))|$((2 * (NTOK * HID + HID * FFN + NTOK * FFN)))|1|FFN up on wgmma (the cuda preset wgmma_tc)|$gemm_wg $gemm_fwd_layout"
  "gemm|gemm.kiln|T=f16 EPI=0|$((2 * NTOK * HID * FFN))|$((2 * (NTOK * FFN + HID * FFN + NTOK * HID)))|1|FFN down dX on wgmma (wgmma_tc): M=$NTOK N=$FFN K=$HID, B n-major|$gemm_wg $gemm_dx_layout"
  "gemm|gemm.kiln|T=f16 EPI=0|$((2 * HID * FFN * NTOK))|$((2 * (NTOK * HID + NTOK * FFN + HID * FFN)))|1|FFN up dW on wgmma (wgmma_tc): M=$HID N=$FFN K=$NTOK, A m-major|$gemm_wg $gemm_dw_layout"
  "gemm|gemm.kiln|T=f16 EPI=4|$((2 * NTOK * FFN * HID))|$((2 * (NTOK * HID + HID * FFN + 2 * NTOK * FFN + FFN)))|1|dH = dY W2 with GELU's backward in the epilogue (EPI 4, gelu_bwd): M=$NTOK N=$FFN K=$HID, B n-major|$gemm_gelu_bwd $gemm_dx_layout"
  "gemm|gemm.kiln|T=f16 EPI=4|$((2 * NTOK * FFN * HID))|$((2 * (NTOK * HID + HID * FFN + 2 * NTOK * FFN + FFN)))|1|dH = dY W2 with GELU's backward on wgmma (wgmma_deep)|$gemm_wg_deep $gemm_dx_layout"
  "gemm|gemm.kiln|T=f16 EPI=0|$((2 * NTOK * FFN * HID))|$((2 * (NTOK * HID + HID * FFN + NTOK * FFN)))|1|FFN up on wgmma, BK 64, 4 stages, a group in flight (wgmma_deep)|$gemm_wg_deep $gemm_fwd_layout"
  "gemm|gemm.kiln|T=f16 EPI=0|$((2 * NTOK * FFN * HID))|$((2 * (NTOK * HID + HID * FFN + NTOK * FFN)))|1|FFN up on wgmma, BK 64, 3 stages, two blocks an SM (wgmma_deep2)|$gemm_wg_deep2 $gemm_fwd_layout"
  "gemm|gemm.kiln|T=f16 EPI=0|$((2 * HID * HID * NTOK))|$((2 * (2 * NTOK * HID + HID * HID)))|1|a 1024x1024 dW on one warpgroup's 64x128, BK 64, 4 stages (wgmma_half): M=$HID N=$HID K=$NTOK, A m-major|$gemm_wg_half $gemm_dw_layout"
  "gemm|gemm.kiln|T=f16 EPI=0|$((2 * NTOK * FFN * HID))|$((2 * (NTOK * HID + HID * FFN + NTOK * FFN)))|1|FFN up on two warpgroups' 128x256 (m64n256k16), BK 64, 4 stages (wgmma_wide)|$gemm_wg_wide $gemm_fwd_layout"
  "gemm|gemm.kiln|T=f32 EPI=0|$((2 * NTOK * FFN * HID))|$((4 * (NTOK * HID + HID * FFN + NTOK * FFN)))|0|FFN up in f32 on the FMA path (fma_f32; the cp.async ring read in place)|$gemm_f32 $gemm_fwd_layout"
  "colsum_f32|gemm.kiln|T=f16|$((NTOK * FFN))|$((2 * NTOK * FFN + 4 * 32 * FFN))|0|rows=$NTOK cols=$FFN in 32 parts of 128 rows (grid 32 x 32)|-D BLOCK_R=16 -D BLOCK_C=128 -D num_warps=4 --multiple-of rows=16 --multiple-of cols=16 --multiple-of ld=16 --multiple-of parts=16"
  "layernorm_fwd|layernorm.kiln|T=f16|$((10 * NTOK * HID))|$((8 * NTOK * HID + 8 * NTOK))|0|rows=$NTOK cols=$HID (x in with its dropout, res in, s and y out; a row in one block)|$wide -D min_blocks=10 --multiple-of cols=16"
  "layernorm_bwd|layernorm.kiln|T=f16|$((12 * NTOK * HID))|$((8 * NTOK * HID + 8 * NTOK + 8 * 256 * HID))|0|rows=$NTOK cols=$HID, 256 partial rows (one a 16 rows); dx and the gradient before x's dropout out|$wide -D min_blocks=6 --multiple-of rows=16 --multiple-of cols=16"
  "layernorm_bwd_reduce|layernorm.kiln||$((2 * 256 * HID))|$((2 * 4 * 256 * HID + 8 * HID))|0|parts=256 cols=$HID|-D BLOCK=16 -D BLOCK_P=64 -D num_warps=4 --multiple-of parts=16 --multiple-of cols=16"
  "embedding_fwd|embedding.kiln|T=f16|$((2 * NTOK * HID))|$((8 * NTOK * HID + 8 * NTOK))|0|ntok=$NTOK hidden=$HID|-D BLOCK_T=4 -D BLOCK_H=256 -D num_warps=4 --multiple-of ntok=16 --multiple-of seq=16 --multiple-of hidden=16"
  "embedding_bwd_word|embedding.kiln|T=f16|$((NTOK * HID))|$((2 * NTOK * HID + 4 * NTOK * HID + 16 * NTOK))|0|ntok=$NTOK hidden=$HID (at most a row per token; the cuda default ids)|-D BLOCK_T=16 -D BLOCK_H=256 -D num_warps=8 --multiple-of ntok=16 --multiple-of hidden=16"
  "embedding_bwd_pos|embedding.kiln|T=f16|$((NTOK * HID))|$((2 * NTOK * HID + 4 * S * HID))|0|batch=$B seq=$S hidden=$HID|-D BLOCK_P=4 -D BLOCK_H=256 -D num_warps=4 --multiple-of seq=16 --multiple-of hidden=16"
  "embedding_bwd_type|embedding.kiln|T=f16|$((2 * NTOK * HID))|$((2 * 2 * NTOK * HID + 8 * NTOK + 4 * 256 * 2 * HID))|0|ntok=$NTOK hidden=$HID ntypes=2, 256 partial rows|-D BLOCK_T=4 -D BLOCK_H=256 -D num_warps=4 --multiple-of ntok=16 --multiple-of hidden=16 --multiple-of parts=16"
  "xent_fwd|xent.kiln|T=f16|$((8 * B * 2))|$((2 * B * 2 + 12 * B))|0|rows=$B classes=2|"
  "xent_bwd|xent.kiln|T=f16|$((8 * B * 2))|$((4 * B * 2 + 12 * B))|0|rows=$B classes=2|"
  "bias_gelu_fwd|gelu.kiln|T=f16|$((20 * NTOK * FFN))|$((4 * NTOK * FFN + 2 * FFN))|0|rows=$NTOK cols=$FFN|-D BLOCK_R=1 -D BLOCK_C=1024 -D num_warps=4 --multiple-of rows=16 --multiple-of cols=16"
  "bias_gelu_bwd|gelu.kiln|T=f16|$((30 * NTOK * FFN))|$((6 * NTOK * FFN + 2 * FFN))|0|rows=$NTOK cols=$FFN (the trainer runs it in the dH gemm's epilogue, EPI 4)|-D BLOCK_R=1 -D BLOCK_C=1024 -D num_warps=4 --multiple-of rows=16 --multiple-of cols=16"
  "tanh_fwd|tanh.kiln|T=f16|$((4 * B * HID))|$((4 * B * HID))|0|n=$((B * HID)) (pooler)|"
  "tanh_bwd|tanh.kiln|T=f16|$((3 * B * HID))|$((6 * B * HID))|0|n=$((B * HID)) (pooler)|"
  "cast_to_f32|cast.kiln|T=f16|$PARAMS|$((6 * PARAMS))|0|n=$PARAMS|-D BLOCK=1024 -D num_warps=4 --multiple-of n=16"
  "cast_from_f32|cast.kiln|T=f16|$PARAMS|$((6 * PARAMS))|0|n=$PARAMS|-D BLOCK=1024 -D num_warps=4 --multiple-of n=16"
  "dropout_fwd|dropout.kiln|T=f16|$((20 * NTOK * HID))|$((4 * NTOK * HID))|0|n=$((NTOK * HID)) (the embeddings' dropout; the layers' is their LayerNorm's)|$wide --multiple-of n=16"
  "dropout_bwd|dropout.kiln|T=f16|$((20 * NTOK * HID))|$((4 * NTOK * HID))|0|n=$((NTOK * HID))|$wide --multiple-of n=16"
  "dropout_add_fwd|dropout.kiln|T=f16|$((21 * NTOK * HID))|$((6 * NTOK * HID))|0|n=$((NTOK * HID))|$wide --multiple-of n=16"
  "adamw_step|adamw.kiln|WRITE_F16=1 TW=f16|$((15 * PARAMS))|$((30 * PARAMS))|0|n=$PARAMS, f16 copy written|$wide --multiple-of n=16"
  "grad_sumsq|adamw.kiln|CHECK=1|$((2 * PARAMS))|$((4 * PARAMS + 4 * 1024))|0|n=$PARAMS, 1024 partial sums, fp16's overflow check in the same pass (the cuda default stream)|-D BLOCK=4096 -D num_warps=8 --multiple-of n=16 --multiple-of parts=16"
  "grad_sumsq_reduce|adamw.kiln||1024|$((4 * 1024 + 4))|0|parts=1024|"
  "grad_accumulate|adamw.kiln||$PARAMS|$((12 * PARAMS))|0|n=$PARAMS (acc += grad: --accumulate's stash)|--multiple-of n=16"
  "attn_fwd|attention.kiln|T=f16 D=$HD|$((4 * SQ))|$((2 * 4 * BHSD + 4 * B * HEADS * S))|1|B=$B H=$HEADS S=$S D=$HD|$attn_fwd"
  "attn_fwd|attention.kiln|T=f16 D=$HD|$((4 * SQ))|$((2 * 4 * BHSD + 4 * B * HEADS * S))|1|B=$B H=$HEADS S=$S D=$HD on wgmma (the cuda preset fa2_wgmma)|$attn_fwd -D min_blocks=4 -D wgmma=1"
  "attn_bwd_delta|attention.kiln|T=f16 D=$HD|$((2 * BHSD))|$((2 * 2 * BHSD + 4 * B * HEADS * S))|0|B=$B H=$HEADS S=$S D=$HD|$attn_delta"
  "attn_bwd_dkdv|attention.kiln|T=f16 D=$HD|$((8 * SQ))|$((2 * 6 * BHSD + 8 * B * HEADS * S))|1|B=$B H=$HEADS S=$S D=$HD|$attn_dkdv"
  "attn_bwd_dkdv|attention.kiln|T=f16 D=$HD|$((8 * SQ))|$((2 * 6 * BHSD + 8 * B * HEADS * S))|1|B=$B H=$HEADS S=$S D=$HD on wgmma (the cuda preset bwd_wgmma)|$attn_bwd_wg"
  "attn_bwd_dkdv|attention.kiln|T=f16 D=$HD|$((8 * SQ))|$((2 * 6 * BHSD + 8 * B * HEADS * S))|1|B=$B H=$HEADS S=$S D=$HD on wgmma, 32 queries (the cuda preset bwd_wgmma_narrow)|$attn_dkdv_wg_narrow"
  "attn_bwd_dq|attention.kiln|T=f16 D=$HD|$((6 * SQ))|$((2 * 5 * BHSD + 8 * B * HEADS * S))|1|B=$B H=$HEADS S=$S D=$HD|$attn_dq"
  "attn_bwd_dq|attention.kiln|T=f16 D=$HD|$((6 * SQ))|$((2 * 5 * BHSD + 8 * B * HEADS * S))|1|B=$B H=$HEADS S=$S D=$HD on wgmma (the cuda preset bwd_wgmma)|$attn_bwd_wg -D min_blocks=3"
  "attn_bwd_dq|attention.kiln|T=f16 D=$HD|$((6 * SQ))|$((2 * 5 * BHSD + 8 * B * HEADS * S))|1|B=$B H=$HEADS S=$S D=$HD on wgmma, 32 keys (the cuda preset bwd_wgmma_narrow)|$attn_dq_wg_narrow -D min_blocks=4"
)
