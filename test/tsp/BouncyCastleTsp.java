import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.security.Security;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.Arrays;
import java.util.Base64;
import java.util.HexFormat;
import org.bouncycastle.cert.X509CertificateHolder;
import org.bouncycastle.cms.SignerInformationVerifier;
import org.bouncycastle.cms.jcajce.JcaSimpleSignerInfoVerifierBuilder;
import org.bouncycastle.jce.provider.BouncyCastleProvider;
import org.bouncycastle.tsp.TimeStampResponse;
import org.bouncycastle.tsp.TimeStampToken;
import org.bouncycastle.tsp.TimeStampTokenInfo;

/**
 * Bouncy Castle's TSP as an independent RFC 3161 verifier (RFC 3161 section 2.4.2). Arguments: the TSA
 * certificate and its root (PEM files). Standard input: one token a line, `<base64 TimeStampResp>
 * <hex SHA-256 imprint> <genTime, epoch milliseconds>`. For each line it prints `ok <genTime ms>` when
 * the response is granted, its token validates with the TSA certificate (signature, message digest,
 * signing certificate attribute, certificate valid at genTime and for time-stamping), its imprint is the
 * hash and its genTime the time given; otherwise `rejected <reason>`. One JVM checks every line.
 */
public class BouncyCastleTsp {
  public static void main(String[] args) throws Exception {
    Security.addProvider(new BouncyCastleProvider());
    CertificateFactory factory = CertificateFactory.getInstance("X.509");
    X509Certificate tsa = (X509Certificate) factory.generateCertificate(new FileInputStream(args[0]));
    X509Certificate root = (X509Certificate) factory.generateCertificate(new FileInputStream(args[1]));
    tsa.verify(root.getPublicKey());
    SignerInformationVerifier verifier = new JcaSimpleSignerInfoVerifierBuilder().setProvider("BC").build(tsa);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
    StringBuilder out = new StringBuilder();
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      if (line.isEmpty()) continue;
      String[] fields = line.split(" ");
      out.append(check(fields[0], fields[1], Long.parseLong(fields[2]), verifier)).append('\n');
    }
    System.out.print(out);
    System.out.flush();
  }

  static String check(String token, String imprint, long genTime, SignerInformationVerifier verifier) {
    try {
      TimeStampResponse response = new TimeStampResponse(Base64.getDecoder().decode(token));
      if (response.getStatus() != 0) return "rejected status " + response.getStatus();
      TimeStampToken stamp = response.getTimeStampToken();
      stamp.validate(verifier);
      TimeStampTokenInfo info = stamp.getTimeStampInfo();
      if (!Arrays.equals(info.getMessageImprintDigest(), HexFormat.of().parseHex(imprint)))
        return "rejected imprint mismatch";
      long read = info.getGenTime().getTime();
      if (read != genTime) return "rejected genTime " + read;
      return "ok " + read;
    } catch (Exception e) {
      return ("rejected " + e.getClass().getSimpleName() + ": " + e.getMessage()).replace('\n', ' ');
    }
  }
}
