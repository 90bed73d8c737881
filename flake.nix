{
  description = "kernel-pipeline workspace: every kernel listed in build.toml, built with kernel-builder";

  nixConfig = {
    extra-substituters = [ "https://huggingface.cachix.org" ];
    extra-trusted-public-keys = [
      "huggingface.cachix.org-1:ynTPbLS0W8ofXd9fDjk1KvoFky9K2jhxe6r4nXAkc/o="
    ];
  };

  inputs = {
    kernel-builder.url = "github:huggingface/kernels";
    # kernel-builder's own nixpkgs: one package set, and its binary cache applies.
    nixpkgs.follows = "kernel-builder/nixpkgs";
  };

  outputs =
    {
      self,
      kernel-builder,
      nixpkgs,
    }:
    let
      inherit (builtins)
        attrNames
        concatMap
        elemAt
        filter
        fromTOML
        head
        listToAttrs
        map
        match
        readDir
        readFile
        stringLength
        substring
        ;

      # The workspace file is the one source of truth for the kernel list and
      # the matrix policy (the same file `python -m pipeline matrix` reads).
      workspace = (fromTOML (readFile ./build.toml)).workspace;
      policy = workspace.matrix;
      ciPolicy = policy // (policy.ci or { });

      # `kernels = ["kernels-src/*", "other/kernel"]`: a trailing `/*` takes
      # every directory below that holds a build.toml; other entries are paths.
      expand =
        pattern:
        let
          glob = match "(.*)/\\*" pattern;
          dir = elemAt glob 0;
          entries = readDir (./. + "/${dir}");
          isKernel = name: entries.${name} == "directory" && builtins.pathExists (./. + "/${dir}/${name}/build.toml");
        in
        if glob == null then
          [ pattern ]
        else
          map (name: "${dir}/${name}") (filter isKernel (attrNames entries));
      kernelDirs = concatMap expand (workspace.kernels or [ ]);
      kernelName = dir: (fromTOML (readFile (./. + "/${dir}/build.toml"))).general.name;

      # One genKernelFlakeOutputs per kernel; `self` is this repository, so
      # every kernel's id carries the workspace revision (as a standalone
      # kernel flake's would carry its own).
      kernels = map (dir: {
        name = kernelName dir;
        outputs = kernel-builder.lib.genKernelFlakeOutputs {
          inherit self;
          path = ./. + "/${dir}";
        };
      }) kernelDirs;

      systems = if kernels == [ ] then [ ] else attrNames (head kernels).outputs.packages;

      # Every kind of variant name kernel-builder writes (nix-builder/lib/variants/):
      #   torch213-cxx11-cu130-x86_64-linux, torch213-metal-aarch64-darwin   torch, arch
      #   torch-stable-abi210-cu130-x86_64-linux                             torch stable ABI
      #   tvm-ffi01-cu130-x86_64-linux                                       tvm-ffi
      #   torch-cuda, torch-cpu                                              noarch
      # Any other name stops the evaluation: no variant is dropped unseen.
      withCompute =
        name: kind: version: token: digits: arch: os:
        let
          n = stringLength digits;
        in
        {
          inherit name kind version arch os;
          backend = if token == "cu" then "cuda" else token;
          cudaMajor = substring 0 (n - 1) digits;
          cuda = "${substring 0 (n - 1) digits}.${substring (n - 1) 1 digits}";
          cudaMinor = substring (n - 1) 1 digits;
        };
      parseVariant =
        name:
        let
          compute = "([a-z]+)([0-9]*)-([a-z0-9_]+)-([a-z]+)";
          torchArch = match "torch([0-9])([0-9]+)(-cxx11)?-${compute}" name;
          stableAbi = match "torch-stable-abi([0-9])([0-9]+)-${compute}" name;
          tvmFfi = match "tvm-ffi([0-9]+)-${compute}" name;
          noarch = match "torch-([a-z]+)" name;
          at = elemAt;
        in
        if torchArch != null then
          withCompute name "torch" "${at torchArch 0}.${at torchArch 1}" (at torchArch 3) (at torchArch 4)
            (at torchArch 5)
            (at torchArch 6)
        else if stableAbi != null then
          withCompute name "torch-stable-abi" "${at stableAbi 0}.${at stableAbi 1}" (at stableAbi 2)
            (at stableAbi 3)
            (at stableAbi 4)
            (at stableAbi 5)
        else if tvmFfi != null then
          withCompute name "tvm-ffi" (at tvmFfi 0) (at tvmFfi 1) (at tvmFfi 2) (at tvmFfi 3) (at tvmFfi 4)
        else if noarch != null then
          {
            inherit name;
            kind = "noarch";
            backend = at noarch 0;
          }
        else
          throw "kernel-pipeline flake.nix: kernel-builder produced the variant `${name}`, which is none of the kinds this flake selects (torchXY-..., torch-stable-abiXY-..., tvm-ffiXY-..., torch-<backend>): extend parseVariant in flake.nix";

      elem = x: xs: builtins.elem x xs;

      # The policy filter of pipeline/matrix.py (compute_matrix): torch, archs,
      # backends, and CUDA versions given exactly ("13.0") or by major ("13":
      # the lowest minor available for that framework/arch/os). What the name
      # of a kind does not carry does not filter it: a stable-ABI variant
      # serves every torch from its ABI version on, so it is kept when the
      # policy names such a torch; tvm-ffi and noarch variants carry no torch
      # version, noarch ones no arch or CUDA version either.
      torchSelected =
        pol: v:
        if v.kind == "torch" then
          elem v.version pol.torch
        else if v.kind == "torch-stable-abi" then
          builtins.any (t: builtins.compareVersions t v.version >= 0) pol.torch
        else
          true;
      selectVariants =
        pol: names:
        let
          # Forced up front: lazily, a name no filter looks at would never be parsed.
          parsed =
            let
              all = map parseVariant names;
            in
            builtins.seq (builtins.all (v: v ? kind) all) all;
          base = filter (
            v: elem v.backend pol.backends && (v.kind == "noarch" || elem v.arch pol.archs) && torchSelected pol v
          ) parsed;
          isCuda = v: v.backend == "cuda" && v.kind != "noarch";
          nonCuda = filter (v: !(isCuda v)) base;
          cuda = filter isCuda base;
          exact = filter (v: elem v.cuda pol.cuda) cuda;
          lowestOfMajor =
            v:
            elem v.cudaMajor pol.cuda
            && builtins.all (
              w:
              !(
                w.kind == v.kind
                && w.version == v.version
                && w.arch == v.arch
                && w.os == v.os
                && w.cudaMajor == v.cudaMajor
              )
              || builtins.fromJSON w.cudaMinor >= builtins.fromJSON v.cudaMinor
            ) cuda;
          byMajor = filter (v: lowestOfMajor v && !(elem v exact)) cuda;
        in
        map (v: v.name) (exact ++ byMajor ++ nonCuda);

      forSystem =
        system:
        let
          pkgs = nixpkgs.legacyPackages.${system};

          # One kernel's variants under a policy, joined as <variant>/...
          kernelTree =
            pol: kernel:
            let
              dists = kernel.outputs.packages.${system}.redistributable or { };
              chosen = selectVariants pol (attrNames dists);
              links = map (v: "ln -s ${dists.${v}}/${v} $out/${v}") chosen;
            in
            pkgs.runCommand "${kernel.name}-variants" { } (
              builtins.concatStringsSep "\n" ([ "mkdir -p $out" ] ++ links)
            );

          # Every kernel, joined as <kernel>/<variant>/...
          workspaceTree =
            name: pol:
            pkgs.runCommand name { } (
              builtins.concatStringsSep "\n" (
                [ "mkdir -p $out" ] ++ map (k: "ln -s ${kernelTree pol k} $out/${k.name}") kernels
              )
            );

          bundle = workspaceTree "kernels-bundle" policy;
        in
        {
          packages =
            listToAttrs (
              map (k: {
                inherit (k) name;
                value = kernelTree policy k;
              }) kernels
            )
            // {
              inherit bundle;
              default = bundle;
              ci = workspaceTree "kernels-ci" ciPolicy;
            };

          devShells =
            listToAttrs (
              map (k: {
                inherit (k) name;
                value = k.outputs.devShells.${system}.default;
              }) kernels
            )
            // (
              if kernels == [ ] then
                { }
              else
                {
                  # kernel-builder's development shell (torch, compilers,
                  # kernel-builder) for the first kernel of build.toml.
                  default = (head kernels).outputs.devShells.${system}.default;
                }
            );
        };

      perSystem = map (system: {
        name = system;
        value = forSystem system;
      }) systems;
      collect = attr: listToAttrs (map (s: { inherit (s) name; value = s.value.${attr}; }) perSystem);
    in
    {
      packages = collect "packages";
      devShells = collect "devShells";
      # For tools and tests: the kernel directories this flake builds, and
      # the variant selection (`selectVariants policy names`).
      lib = {
        inherit kernelDirs parseVariant selectVariants;
      };
    };
}
