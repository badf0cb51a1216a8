build/bin/hetrt run /work/wt-figures/../shared/fixtures/tvm-0.18/mlf/mlp_aot_mlf.tar --device micro --inputs /work/wt-figures/../shared/fixtures/tvm-0.18/mlf/mlp_inputs.params --repeat 100
