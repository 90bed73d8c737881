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
        foldl'
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

      # Variant names as kernel-builder writes them: torch213-cxx11-cu130-x86_64-linux,
      # torch213-metal-aarch64-darwin.
      parseVariant =
        name:
        let
          m = match "torch([0-9])([0-9]+)(-cxx11)?-([a-z]+)([0-9]*)-([a-z0-9_]+)-([a-z]+)" name;
          token = elemAt m 3;
          digits = elemAt m 4;
          n = stringLength digits;
        in
        if m == null then
          null
        else
          {
            inherit name;
            torch = "${elemAt m 0}.${elemAt m 1}";
            backend = if token == "cu" then "cuda" else token;
            cudaMajor = substring 0 (n - 1) digits;
            cuda = "${substring 0 (n - 1) digits}.${substring (n - 1) 1 digits}";
            cudaMinor = substring (n - 1) 1 digits;
            arch = elemAt m 5;
            os = elemAt m 6;
          };

      elem = x: xs: builtins.elem x xs;

      # The policy filter of pipeline/matrix.py (compute_matrix): torch, archs,
      # backends, and CUDA versions given exactly ("13.0") or by major ("13":
      # the lowest minor available for that torch/arch/os).
      selectVariants =
        pol: names:
        let
          parsed = filter (v: v != null) (map parseVariant names);
          base = filter (
            v: elem v.torch pol.torch && elem v.arch pol.archs && elem v.backend pol.backends
          ) parsed;
          nonCuda = filter (v: v.backend != "cuda") base;
          cuda = filter (v: v.backend == "cuda") base;
          exact = filter (v: elem v.cuda pol.cuda) cuda;
          lowestOfMajor =
            v:
            elem v.cudaMajor pol.cuda
            && builtins.all (
              w:
              !(w.torch == v.torch && w.arch == v.arch && w.os == v.os && w.cudaMajor == v.cudaMajor)
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
      # For tools: the kernel directories this flake builds.
      lib.kernelDirs = kernelDirs;
    };
}
